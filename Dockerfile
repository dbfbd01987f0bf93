# rlbench as a container image, for generators run by a cluster scheduler
# (deploy/kubernetes/). A static binary on a small base that has a shell,
# which the merge step's glob needs:
#   docker build -t rlbench .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/rlbench ./cmd/rlbench

FROM alpine:3.20
COPY --from=build /out/rlbench /usr/local/bin/rlbench
USER 65534:65534
ENTRYPOINT ["rlbench"]
