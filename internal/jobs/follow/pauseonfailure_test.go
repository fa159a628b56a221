package follow

import (
	"context"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The pause a final failure causes is written with its record; a job
// already paused by an operator keeps that pause, one resumed over its
// file's paused: true is paused again; a success or a retried failure
// writes none.
func TestPauseOnFailureKeepsAnOperatorsPause(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/pof/")
	job := jobstest.HTTPJob("settle", "@every 1s", "http://127.0.0.1:1/")
	job.PauseOnFailure = true
	job.Retries.Max = 1
	cfg := jobstest.Config(job)
	at := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
	stored := func() (pause.Marker, bool) {
		resp, err := cli.Get(context.Background(), k.Paused("settle"))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return pause.Marker{}, false
		}
		return pause.Decode(resp.Kvs[0].Value), true
	}
	tick := func(i int) *queue.Entry {
		return queue.NewEntry(runs.ID("settle", at.Add(time.Duration(i)*time.Second)), &cfg.Jobs[0], nil, at, at, 1, runs.Schedule)
	}

	end(t, cli, k, cfg, tick(0), runs.Failed, at) // attempt 1 of 2: retried
	end(t, cli, k, cfg, tick(1), runs.Succeeded, at)
	if _, ok := stored(); ok {
		t.Fatal("paused by a retried failure or a success")
	}
	last := tick(2).Retry(at, &runs.Record{Outcome: runs.Failed})
	end(t, cli, k, cfg, last, runs.Failed, at)
	p, ok := stored()
	if want := "paused after run " + last.RunID + " failed"; !ok || !p.Paused || p.Reason != want {
		t.Fatalf("after the last attempt failed: %+v (stored %v), want reason %q", p, ok, want)
	}

	if _, err := cli.Put(context.Background(), k.Paused("settle"), pause.Encode(pause.Marker{Reason: "vendor outage"})); err != nil {
		t.Fatal(err)
	}
	end(t, cli, k, cfg, tick(3).Retry(at, &runs.Record{Outcome: runs.Failed}), runs.TimedOut, at)
	if p, _ := stored(); p.Reason != "vendor outage" {
		t.Errorf("an operator's pause became %q", p.Reason)
	}

	if _, err := cli.Put(context.Background(), k.Paused("settle"), pause.Resumed); err != nil {
		t.Fatal(err)
	}
	lost := tick(4).Retry(at, &runs.Record{Outcome: runs.Lost})
	end(t, cli, k, cfg, lost, runs.Lost, at)
	if p, _ := stored(); !p.Paused || p.Reason != "paused after run "+lost.RunID+" lost" {
		t.Errorf("a resumed job after a lost run: %+v", p)
	}
}
