package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/wire"
)

// A backfill's answer reads as a sentence per list, naming at most ten
// run ids and counting the rest.
func TestWriteBackfill(t *testing.T) {
	at := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("r@%d", i))
	}
	var b bytes.Buffer
	writeBackfill(&b, client.Backfilled{Backfill: wire.Backfill{Job: "r", From: at, To: at.Add(3 * time.Hour),
		Queued: ids, SkippedExisting: []string{"r@x"}, LeftToSchedule: []string{"r@y", "r@z"}}})
	want := "Queued 12 runs of job r from 2026-11-24T02:00:00Z to 2026-11-24T05:00:00Z: r@0, r@1, r@2, r@3, r@4, r@5, r@6, r@7, r@8, r@9 and 2 more.\n" +
		"Skipped 1 tick that already ran, run or are queued: r@x.\n" +
		"Left 2 ticks to the schedule, which has not reached them yet: r@y, r@z.\n"
	if b.String() != want {
		t.Errorf("%q\nwant %q", b.String(), want)
	}
}

// scheduler backfill against a real replica: the ticks are queued, --wait
// returns once each has its record, and a second backfill of the range
// finds them existing.
func TestBackfillCommand(t *testing.T) {
	etcd := etcdtest.Start(t)
	p := startProc(t, "a", writeConfig(t, etcd.Endpoints()[0], "/backfill/", `jobs:
  - name: newyear
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["true"]
`))
	args := []string{"backfill", "newyear", "--from", "2023-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z", "--server", p.url}
	var out, errOut string
	poll.Until(t, 30*time.Second, "a backfill once the leader scheduled the job", func() (bool, string) {
		var code int
		out, errOut, code = cli(t, append(args, "--wait")...)
		if code != 0 && strings.Contains(errOut, "has not been scheduled by a leader yet") {
			return false, errOut
		}
		if code != 0 {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
		return true, ""
	})
	ids := "newyear@2023-01-01T00:00:00Z, newyear@2024-01-01T00:00:00Z, newyear@2025-01-01T00:00:00Z, newyear@2026-01-01T00:00:00Z"
	want := "Queued 4 runs of job newyear from 2023-01-01T00:00:00Z to 2026-01-02T00:00:00Z: " + ids + ".\n" +
		"All 4 backfilled runs finished: 4 succeeded.\n"
	if out != want {
		t.Errorf("stdout %q\nwant %q", out, want)
	}
	recs, err := p.api.Runs(t.Context(), "newyear", 10, "")
	if err != nil || len(recs) != 4 {
		t.Fatalf("after --wait: %d records, %v; want 4", len(recs), err)
	}
	for _, r := range recs {
		if r.Outcome != client.OutcomeSucceeded || r.Trigger != "backfill" {
			t.Errorf("%s: %s, trigger %s; want succeeded, backfill", r.RunID, r.Outcome, r.Trigger)
		}
	}

	out, errOut, code := cli(t, append(args, "-o", "json")...)
	var res client.Backfilled
	decodes(t, out, &res)
	if code != 0 || len(res.Queued) != 0 || len(res.SkippedExisting) != 4 {
		t.Errorf("again: exit %d, %s%s; want nothing queued, 4 existing", code, out, errOut)
	}
}
