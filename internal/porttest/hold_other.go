//go:build !unix

package porttest

import "net"

// holdPort returns a loopback port that was free a moment ago: without a
// bound, non-listening socket, the port is not held.
func holdPort() (addr string, release func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr = ln.Addr().String()
	ln.Close()
	return addr, func() {}, nil
}
