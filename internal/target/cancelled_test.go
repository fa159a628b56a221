package target

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
)

// A run whose context ended says why in the reader's words, without the
// package chain its cause carries (issue 34, item 4: "target: run
// cancelled: worker: shutdown grace period over").
func TestStoppedSaysWhyForPeople(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cause   error
		outcome runs.Outcome
		want    string
	}{
		{"a cause with a sentence of its own (the worker's shutdown)", withSentence{"worker: shutdown grace period over", "this replica shut down"}, runs.Cancelled,
			"run cancelled: this replica shut down"},
		{"cancel request", errors.New("cancelled: deploy rollback"), runs.Cancelled, "run cancelled: deploy rollback"},
		{"lease guard", fmt.Errorf("guard: %w", session.ErrGuardExpired), runs.Cancelled,
			"run cancelled: this replica's etcd session could have expired, so the run was stopped before another replica could take its slot"},
		{"own timeout", fmt.Errorf("%w after 1s", errTimeout), runs.TimedOut, "run timed out after 1s (the job's timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(tc.cause)
			res := stopped(ctx)
			if res.Outcome != tc.outcome || res.Error != tc.want {
				t.Errorf("stopped: %s %q, want %s %q", res.Outcome, res.Error, tc.outcome, tc.want)
			}
			for _, chain := range []string{"target: ", "worker: ", "session: "} {
				if strings.Contains(res.Error, chain) {
					t.Errorf("%q carries the package prefix %q", res.Error, chain)
				}
			}
		})
	}
}

// withSentence is a cause that carries a sentence for people, as the
// worker's shutdown and the session's errors do.
type withSentence struct{ text, user string }

func (e withSentence) Error() string       { return e.text }
func (e withSentence) UserMessage() string { return e.user }
