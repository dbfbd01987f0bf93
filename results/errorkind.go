package results

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/rlbench/rlbench/strategies"
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
	// simulated by --crash-rate (strategies.ErrCrashed).
	KindCrashed = "crashed"
	// KindOther is any error not classified otherwise.
	KindOther = "other"
)

// ErrorKind classifies err for reports. It looks through wrapping, checking in
// this order:
//
//   - a strategies.ReplyError: its Prefix(), e.g. "WRONGTYPE", "NOSCRIPT", "ERR";
//   - strategies.ErrCrashed: "crashed";
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
	if re, ok := errors.AsType[strategies.ReplyError](err); ok {
		if p := re.Prefix(); p != "" {
			return p
		}
		return KindOther
	}
	if errors.Is(err, strategies.ErrCrashed) {
		return KindCrashed
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
