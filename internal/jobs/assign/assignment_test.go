package assign

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/txnbatch"
)

func TestAssignmentRoundTrip(t *testing.T) {
	a := Assignment{Worker: "w1", At: instant.Add(500 * time.Millisecond), Group: "g", Jobs: []Job{{"a", "r1"}, {"b", ""}}}
	got, err := Decode(layout, a.Key(layout), []byte(a.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Worker != a.Worker || !got.At.Equal(a.At) || len(got.Jobs) != 2 || got.Jobs[0] != a.Jobs[0] || got.Jobs[1] != a.Jobs[1] {
		t.Fatalf("Decode(Encode(%+v)) = %+v", a, got)
	}
	if a.Encode() != `[["a","r1"],["b",""]]` {
		t.Fatalf("Encode = %s", a.Encode())
	}
	if got.RunID("a") != "a@2026-11-25T17:00:00.5Z" {
		t.Fatalf("RunID = %s, want today's run id", got.RunID("a"))
	}
}

func TestAssignmentErrorsNameWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		a    Assignment
		want string
	}{
		{Assignment{Worker: "w/1", At: instant, Group: "g", Jobs: []Job{{Name: "a"}}}, `worker "w/1"`},
		{Assignment{Worker: "w1", Group: "g", Jobs: []Job{{Name: "a"}}}, "worker w1 has no instant"},
		{Assignment{Worker: "w1", At: instant, Group: "g"}, "names no job"},
		{Assignment{Worker: "w1", At: instant, Group: "g", Jobs: []Job{{Name: "a"}, {Name: "a"}}}, `job "a" is empty, holds '/' or is named twice`},
	} {
		if err := tc.a.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want it to say %q", tc.a, err, tc.want)
		}
	}
	if _, err := Decode(layout, layout.Cursor("a"), []byte("[]")); err == nil {
		t.Error("Decode took a cursor key for an assignment")
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	cli := newEnv(t).cli
	if _, err := New(nil, layout, clockwork.NewRealClock(), Options{}); err == nil {
		t.Error("New without a KV")
	}
	if _, err := New(cli, layout, nil, Options{}); err == nil {
		t.Error("New without a clock")
	}
	if _, err := New(cli, layout, clockwork.NewRealClock(), Options{MaxTxnOps: 3}); err == nil {
		t.Error("New with MaxTxnOps 3")
	}
}

// Cleanup deletes nothing of what changed since it was read: here a chunk
// claimed after the read, whose marker names a run that may be running.
// Through the Store's own group committer and through one it is given
// (Options.Batch), as a replica's worker cleans up.
func TestCleanupKeepsWhatChangedSinceRead(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(map[bool]string{false: "own committer", true: "given committer"}[batched], func(t *testing.T) {
			e := newEnv(t)
			if batched {
				c, err := txnbatch.New(e.cli, txnbatch.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				if e.store, err = New(e.cli, layout, e.clock, Options{Batch: c}); err != nil {
					t.Fatal(err)
				}
			}
			st := e.authorize(e.elect("a"), "w1", "a", "b")
			lease := e.lease()
			if _, err := e.claim(lease, st, 0, run("a", 0)); err != nil {
				t.Fatal(err)
			}
			read := e.stored("w1")
			if _, err := e.claim(lease, st, 0, run("a", 0), run("b", 0)); err != nil {
				t.Fatal(err)
			}
			if err := e.store.Cleanup(e.ctx(), read); !errors.Is(err, ErrConflict) {
				t.Fatalf("Cleanup of a stale read: %v, want ErrConflict", err)
			}
			if n := e.count(layout.WorkerClaimed("w1")) + e.count(layout.WorkerAssignments("w1")); n != 2 {
				t.Fatalf("a refused cleanup left %d keys, want the assignment and its marker", n)
			}
			if err := e.store.Cleanup(e.ctx(), e.stored("w1")); err != nil {
				t.Fatal(err)
			}
			if n := e.count(layout.WorkerClaimed("w1")) + e.count(layout.WorkerAssignments("w1")); n != 0 {
				t.Fatalf("cleanup left %d keys", n)
			}
		})
	}
}
