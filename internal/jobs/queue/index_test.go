package queue

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// EachRelated visits exactly the entries that may share a limit with a
// run: its job's, and those of jobs naming one of its resources, each
// once, as entries arrive (before or after their specs), change and go.
func TestEachRelatedVisitsTheRunsThatMayShareALimit(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/index/")
	res := []config.Resource{{Name: "R", Limit: 1}, {Name: "S", Limit: 1}}
	job := func(name string, resources ...string) *config.Job {
		j := jobstest.HTTPJob(name, "@every 1s", "http://127.0.0.1:1/")
		j.Resources = resources
		return &j
	}
	jobs := map[string]*config.Job{"a": job("a", "R", "S"), "b": job("b", "R"), "c": job("c", "R", "S"), "d": job("d", "S"), "e": job("e"), "ab": job("ab")}
	w := Writes{Client: cli, Keys: k}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)
	entries := map[string]*Entry{}
	add := func(name string, i int) *Entry {
		at := t0.Add(time.Duration(i) * time.Second)
		e := NewEntry(runs.ID(name, at), jobs[name], res, at, at, 1, runs.Schedule)
		if ok, err := w.Add(ctx, e); err != nil || !ok {
			t.Fatalf("add %s: %v %v", e.RunID, ok, err)
		}
		entries[e.RunID] = e
		return e
	}
	for _, name := range []string{"a", "b", "c", "d", "e", "ab"} {
		add(name, 0)
	}
	add("a", 1)
	add("c", 1)

	specs := NewSpecs(k, cli, nil)
	view := NewView(k, nil, specs)
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	// The queue's mirror starts first: its entries arrive before their
	// specs, unresolved, and the index learns their resources when the
	// specs come.
	go func() { _ = mirror.Run(mctx, cli, k.Queue(), view, nil); done <- struct{}{} }()
	<-view.Ready()
	go func() { _ = mirror.Run(mctx, cli, k.Specs(), specs, nil); done <- struct{}{} }()
	defer func() { stop(); <-done; <-done }()

	related := func(of *Entry) []string {
		var out []string
		view.EachRelated(of, func(q *Item) { out = append(out, q.RunID) })
		sort.Strings(out)
		return out
	}
	ids := func(names ...string) []string {
		var out []string
		for id, e := range entries {
			if slices.Contains(names, e.Job) {
				out = append(out, id)
			}
		}
		sort.Strings(out)
		return out
	}
	expect := func(what string, of *Entry, names ...string) {
		t.Helper()
		want := ids(names...)
		poll.Until(t, 10*time.Second, what, func() (bool, string) {
			got := related(of)
			return slices.Equal(got, want), fmt.Sprintf("visited %v, want %v", got, want)
		})
	}
	resolved := func(e *Entry) *Entry {
		sp := &Spec{Job: *jobs[e.Job]}
		for _, r := range jobs[e.Job].Resources {
			sp.Resources = append(sp.Resources, ResourceLimit{Name: r, Limit: 1})
		}
		return e.withSpec(sp)
	}
	a0 := resolved(entries[runs.ID("a", t0)])
	expect("a's run: a, b, c (R), d (S), each once; not e, nor ab", a0, "a", "b", "c", "d")
	expect("b's run: a and c (R) and itself", resolved(entries[runs.ID("b", t0)]), "a", "b", "c")
	expect("e's run: its own only", resolved(entries[runs.ID("e", t0)]), "e")

	// Changes: b's entry goes, d gets a second run, c's first is rewritten
	// as running (still visited: the caller looks at the state).
	if _, err := cli.Delete(ctx, k.Entry("b", runs.ID("b", t0))); err != nil {
		t.Fatal(err)
	}
	delete(entries, runs.ID("b", t0))
	add("d", 1)
	c0 := entries[runs.ID("c", t0)]
	if _, err := cli.Put(ctx, k.Entry("c", c0.RunID), c0.Running("r1", 0, t0).Encode()); err != nil {
		t.Fatal(err)
	}
	expect("a's run after the changes", a0, "a", "c", "d")
	poll.For(t, 10*time.Second, "c's first run running in the view", func() bool {
		q := view.Find(c0.RunID)
		return q != nil && q.State == Running
	})
	if got := view.ListJob("a", nil); len(got) != 2 || got[0].RunID != runs.ID("a", t0) {
		t.Errorf("ListJob(a): %d entries, first %v; want a's two, oldest first", len(got), got)
	}
}
