package slots

import (
	"errors"
	"testing"
)

// A view can refuse a claim for a slot freed since it last heard: its
// watch has not delivered the release yet. Such a refusal says so (View);
// with Confirm the claim reads etcd instead and takes the freed slot, and
// a refusal etcd gives is not the view's.
func TestConfirmedRefusalIsEtcds(t *testing.T) {
	cli, sess, ctx := claimSetup(t)
	live := startSemaphore(t, cli)
	req := func(run string, confirm bool) Request {
		return Request{Job: "j", MaxConcurrency: 1, Resources: []Resource{{Name: "r", Limit: 1}},
			Value: Value{RunID: run, Holder: "a"}, Confirm: confirm}
	}

	first, err := live.Claim(ctx, sess, req("j@1", false))
	if err != nil {
		t.Fatal(err)
	}
	stale := frozenSemaphore(t, cli) // sees j@1 holding the slots, for good
	if err := live.Release(ctx, first); err != nil {
		t.Fatal(err)
	}

	var full *FullError
	if _, err := stale.Claim(ctx, sess, req("j@2", false)); !errors.As(err, &full) || !full.View {
		t.Fatalf("claim against a view that missed the release: err = %v, want a FullError from the view", err)
	}
	second, err := stale.Claim(ctx, sess, req("j@2", true))
	if err != nil {
		t.Fatalf("confirmed claim of the freed slot: %v", err)
	}
	if second.Slot != 0 {
		t.Errorf("took slot %d, want 0", second.Slot)
	}
	full = nil
	if _, err := stale.Claim(ctx, sess, req("j@3", true)); !errors.As(err, &full) || full.View || full.Limit != LimitJob {
		t.Fatalf("confirmed claim of a slot j@2 holds: err = %v (%+v), want etcd's FullError for the job", err, full)
	}
}
