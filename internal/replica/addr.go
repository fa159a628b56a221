package replica

import (
	"net"
)

// advertised is the API address other replicas and clients can use: the
// bound address, or, when bound to every interface, the first non-loopback
// address of this host (a pod's IP in Kubernetes) with the bound port.
func advertised(bound string) string {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		return bound
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return bound
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return net.JoinHostPort(n.IP.String(), port)
		}
	}
	return bound
}
