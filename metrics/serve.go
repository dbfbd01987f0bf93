package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Path is where a Server serves the metrics.
const Path = "/metrics"

// ErrInvalidAddr is returned, wrapped, for an address that is not
// HOST:PORT with a port from 0 to 65535.
var ErrInvalidAddr = errors.New("want HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, or :9464 for every interface; port 0 picks a free one)")

// CheckAddr checks that addr is HOST:PORT, HOST possibly empty (every
// interface), without listening.
func CheckAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, ErrInvalidAddr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q: %w", addr, port, ErrInvalidAddr)
	}
	return nil
}

// Server serves an Exporter over HTTP at Path.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	addr string // as given to Listen
	// done receives Serve's error once it returns.
	done chan error
}

// Listen checks addr, listens on it and serves e at Path in the
// background until Close.
func Listen(addr string, e *Exporter) (*Server, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, e.Handler())
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, addr: addr, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// URL is the address to scrape, e.g. http://127.0.0.1:9464/metrics.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + Path }

// Where is URL for a log line: with "(every interface)" after it when the
// address given to Listen names no host, or an unspecified one (0.0.0.0,
// ::): anyone who reaches the machine can scrape it.
func (s *Server) Where() string { return where(s.addr, s.URL()) }

// where is Where of a server listening on addr, at url.
func where(addr, url string) string {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return url + " (every interface)"
	}
	return url
}

// Close stops the server: it waits for the scrapes in progress until ctx
// ends, then closes their connections.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		return fmt.Errorf("metrics: close: %w", err)
	}
	return nil
}
