package worker

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// A parked run whose views changed after its last attempt goes back to the
// pending set at the dispatch loop's next look, even when the loop took
// its own change channels after that change and so was never woken by it.
func TestParkedRunChangedSinceItsAttemptIsLookedAtAgain(t *testing.T) {
	clock := clockwork.NewFakeClock()
	w := &queueRunner{d: Deps{Clock: clock}, parked: map[string]parkedRun{}}
	changed, quiet := make(chan struct{}), make(chan struct{})
	close(changed) // the slots view changed after the attempt
	far := clock.Now().Add(time.Hour)
	w.parked["/q/changed"] = parkedRun{modRev: 1, until: far, slotsChanged: changed, queueChanged: quiet}
	w.parked["/q/quiet"] = parkedRun{modRev: 2, until: far, slotsChanged: quiet, queueChanged: quiet}
	w.unpark(false)
	if _, still := w.parked["/q/changed"]; still || len(w.pending) != 1 || w.pending[0].key != "/q/changed" {
		t.Fatalf("parked %v, pending %v: want the changed run pending and the quiet one parked", w.parked, w.pending)
	}
	if _, still := w.parked["/q/quiet"]; !still {
		t.Error("the run with no change since its attempt left the parked set")
	}
}
