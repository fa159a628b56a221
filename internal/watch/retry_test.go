package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// A Retry no loop can use (here a zero Min beside a Max, which would retry
// etcd with no delay at all) is refused at once, naming it; the zero Retry
// is DefaultRetry.
func TestRunRefusesABadRetry(t *testing.T) {
	w := Watch{Prefixes: []string{"/p/"}, Retry: backoff.Policy{Max: time.Second}}
	err := w.Run(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), "watch [/p/]: Retry: backoff: Min must be positive, got 0s") {
		t.Fatalf("Run = %v, want the Retry refused", err)
	}
	if got := (Watch{}).withDefaults().Retry; got != DefaultRetry {
		t.Fatalf("the zero Retry = %+v, want DefaultRetry %+v", got, DefaultRetry)
	}
}
