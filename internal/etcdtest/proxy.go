package etcdtest

import (
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/internal/netproxy"
)

// NewProxy starts a pausable, delaying TCP proxy in front of target (an
// http:// URL or host:port), closed at cleanup.
func NewProxy(t testing.TB, target string) *netproxy.Proxy {
	t.Helper()
	target = strings.TrimPrefix(strings.TrimPrefix(target, "http://"), "https://")
	p, err := netproxy.New(target)
	if err != nil {
		t.Fatalf("etcdtest: proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}
