package envoyproc

import (
	"fmt"
	"net"
)

// FreePort asks the kernel for an unused TCP port on 127.0.0.1. The port is
// released before returning, so another process could take it before the
// caller binds it; that is rare enough for tests and sweeps, and Start then
// fails with Envoy's bind error rather than hanging.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("envoyproc: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePorts returns n distinct free ports (see FreePort). They are held
// open together so the kernel cannot hand out the same one twice.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("envoyproc: find %d free ports: %w", n, err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
