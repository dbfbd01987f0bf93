package results

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// Error kinds that ErrorKind returns for errors that are not Redis error
// replies. A Redis error reply is reported by its first word instead, e.g.
// "WRONGTYPE", "NOSCRIPT" or "ERR".
const (
	// KindTimeout is a deadline that passed: context.DeadlineExceeded or a
	// net.Error whose Timeout() is true.
	KindTimeout = "timeout"
	// KindCanceled is a canceled context.
	KindCanceled = "canceled"
	// KindConnRefused is a connection refused by the server's host (ECONNREFUSED).
	KindConnRefused = "conn-refused"
	// KindConnReset is a connection reset by the peer (ECONNRESET) or a write
	// to a connection the peer closed (EPIPE).
	KindConnReset = "conn-reset"
	// KindConnClosed is a connection that closed under the client: io.EOF,
	// io.ErrUnexpectedEOF or net.ErrClosed.
	KindConnClosed = "conn-closed"
	// KindCrashed is a client that died between or during its commands,
	// simulated by --crash-rate (strategies.ErrCrashed, whose ErrorKind it is).
	KindCrashed = "crashed"
	// KindOther is any error not classified otherwise.
	KindOther = "other"
)

// KindedError is an error that names its own kind for reports. The errors
// rlbench makes itself implement it: strategies.ReplyError (a Redis error
// reply, whose kind is its first word) and strategies.ErrCrashed
// (KindCrashed). Defining the interface here, where it is used, keeps this
// package free of the packages that produce the errors.
type KindedError interface {
	error
	// ErrorKind is the error's kind, e.g. "WRONGTYPE"; "" means KindOther.
	ErrorKind() string
}

// ErrorKind classifies err for reports. It looks through wrapping, checking in
// this order:
//
//   - a KindedError: its ErrorKind(), e.g. "WRONGTYPE", "NOSCRIPT", "ERR" for
//     a strategies.ReplyError, "crashed" for strategies.ErrCrashed, and
//     "other" when it is "";
//   - context.DeadlineExceeded or a net.Error with Timeout(): "timeout";
//   - context.Canceled: "canceled";
//   - syscall.ECONNREFUSED: "conn-refused";
//   - syscall.ECONNRESET or syscall.EPIPE: "conn-reset";
//   - io.EOF, io.ErrUnexpectedEOF or net.ErrClosed: "conn-closed";
//   - anything else: "other".
//
// ErrorKind(nil) is "". It does not allocate for the errors Redis clients
// return.
func ErrorKind(err error) string {
	if err == nil {
		return ""
	}
	if ke, ok := errors.AsType[KindedError](err); ok {
		if k := ke.ErrorKind(); k != "" {
			return k
		}
		return KindOther
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return KindTimeout
	}
	switch {
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindConnRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return KindConnReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return KindConnClosed
	}
	return KindOther
}
