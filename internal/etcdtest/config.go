package etcdtest

import (
	"fmt"
	"time"
)

// Config is a scheduler config file for tests that run replicas on an
// external etcd (endpoint): an isolated key prefix, short session TTLs, the
// API on a kernel-chosen port, then extra (a jobs section, notify, ...).
func Config(endpoint, prefix, extra string) string {
	return ConfigTTL(endpoint, prefix, 2*time.Second, extra)
}

// ConfigTTL is Config with the session TTL ttl, for tests whose replicas
// must keep their sessions through a burst of work on a loaded machine.
func ConfigTTL(endpoint, prefix string, ttl time.Duration, extra string) string {
	return fmt.Sprintf(`cluster:
  etcd:
    endpoints: [%q]
    prefix: %s
  session_ttl: %s
  lease_margin: 500ms
api:
  listen: 127.0.0.1:0
%s`, endpoint, prefix, ttl, extra)
}
