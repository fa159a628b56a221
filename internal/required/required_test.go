package required

import (
	"errors"
	"testing"
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
