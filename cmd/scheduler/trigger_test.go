package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/wire"
)

// trigger --wait ends with a sentence: the outcome in words, what the
// target answered (an exit code or an HTTP status, named as such), where
// and how long.
func TestWriteOutcome(t *testing.T) {
	at := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	three := 3
	for _, tc := range []struct {
		run  client.Run
		want string
	}{
		{recordRun(runs.Record{RunID: "web@1", Outcome: "succeeded", HTTPStatus: 200, Holder: "a", StartedAt: at, EndedAt: at.Add(1200 * time.Millisecond)}),
			"web@1: succeeded (HTTP 200) on replica a after 1.2s\n"},
		{recordRun(runs.Record{RunID: "sh@1", Outcome: "failed", ExitCode: &three, Holder: "b", StartedAt: at, EndedAt: at.Add(5 * time.Millisecond)}),
			"sh@1: failed (exit code 3) on replica b after 5ms\n"},
		{recordRun(runs.Record{RunID: "sh@2", Outcome: "timed_out", Holder: "b", StartedAt: at, EndedAt: at.Add(time.Minute)}),
			"sh@2: timed out on replica b after 1m0s\n"},
		{recordRun(runs.Record{RunID: "sh@3", Outcome: "skipped"}), "sh@3: skipped\n"},
	} {
		var b bytes.Buffer
		writeOutcome(&b, tc.run)
		if b.String() != tc.want {
			t.Errorf("%q\nwant %q", b.String(), tc.want)
		}
	}
}

// recordRun is the client's run of a record, as a job's history lists it.
func recordRun(r runs.Record) client.Run { return client.Run{Run: wire.Run{Record: r}} }
