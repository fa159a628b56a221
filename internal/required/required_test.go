package required

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Only the missing fields are named, in order, in the one wording.
func TestCheck(t *testing.T) {
	errs := Check("worker",
		Field{Missing: true, Name: "Client", Role: "the etcd client"},
		Field{Missing: false, Name: "Queue", Role: "the view of queued runs"},
		Field{Missing: true, Name: "Metrics", Role: "the engine's metrics"})
	want := "worker: Client is required: the etcd client\nworker: Metrics is required: the engine's metrics"
	if got := errors.Join(errs...); got == nil || got.Error() != want {
		t.Fatalf("Check = %v, want %q", got, want)
	}
	if errs := Check("worker", Field{Name: "Client"}); errs != nil {
		t.Fatalf("Check with nothing missing = %v, want none", errs)
	}
}

// Only negative durations are reported; zero means "the default".
func TestNotNegative(t *testing.T) {
	errs := NotNegative("leader",
		Duration{Name: "Lookahead", Value: -time.Second},
		Duration{Name: "SpecGrace", Value: 0},
		Duration{Name: "Backup", Value: -time.Millisecond})
	want := "leader: Lookahead must not be negative, got -1s\nleader: Backup must not be negative, got -1ms"
	if got := errors.Join(errs...); got == nil || got.Error() != want {
		t.Fatalf("NotNegative = %v, want %q", got, want)
	}
	if errs := NotNegative("leader", Duration{Name: "Lookahead", Value: time.Second}); errs != nil {
		t.Fatalf("NotNegative with nothing negative = %v, want none", errs)
	}
}

// Or fills only a zero value, of any comparable type, interfaces included.
func TestOr(t *testing.T) {
	d := time.Duration(0)
	Or(&d, time.Second)
	set := 2 * time.Second
	Or(&set, time.Second)
	var s fmt.Stringer
	Or(&s, fmt.Stringer(time.Minute))
	if d != time.Second || set != 2*time.Second || s != fmt.Stringer(time.Minute) {
		t.Fatalf("Or: zero became %v, set became %v, nil interface became %v", d, set, s)
	}
}
