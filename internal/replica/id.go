package replica

import (
	"crypto/rand"
	"encoding/hex"
	"os"
)

// defaultID is the hostname plus a short random suffix, so two replicas on
// one host, or a pod restarted under the same name, never share an id.
func defaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "scheduler"
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}
