package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The view shows an entry whose spec it has not seen unresolved, and
// resolves it when the spec arrives; Resolve reads a spec the copy lacks,
// and says so when etcd has none.
func TestViewResolvesEntriesWhenTheirSpecArrives(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/specs/")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	specs := NewSpecs(k, cli, nil)
	view := NewView(k, nil, specs)
	for prefix, h := range map[string]mirror.Handler{k.Specs(): specs, k.Queue(): view} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = mirror.Run(ctx, cli, prefix, h, nil) }()
	}

	job := jobstest.WithDefaults(jobstest.HTTPJob("late", "@every 1s", "http://127.0.0.1:1/late"))
	at := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	e := NewEntry(runs.ID("late", at), &job, nil, at, at, 1, runs.Schedule)
	key := k.Entry("late", e.RunID)
	if _, err := cli.Put(ctx, key, e.Encode()); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, "the entry in the view", func() bool { return view.Get(key) != nil })
	q := view.Get(key)
	if q.Resolved() {
		t.Fatal("resolved an entry whose spec etcd does not have")
	}
	// A copy that never watched specs/ reads etcd, and finds nothing.
	if _, err := NewSpecs(k, cli, nil).Resolve(ctx, q); !errors.Is(err, ErrSpecMissing) {
		t.Fatalf("Resolve without the spec in etcd: %v, want ErrSpecMissing", err)
	}

	changed := view.Changed()
	spec, _ := e.SpecOp(k)
	if _, err := cli.Txn(ctx).Then(spec).Commit(); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, "the entry resolved in the view", func() bool {
		q := view.Get(key)
		return q != nil && q.Resolved() && q.Spec.HTTP.URL == "http://127.0.0.1:1/late"
	})
	select {
	case <-changed:
	default:
		t.Error("resolving the entry did not signal a change (a run waiting for its spec would not wake)")
	}
	r, err := NewSpecs(k, cli, nil).Resolve(ctx, q)
	if err != nil || r.Spec.HTTP.URL != "http://127.0.0.1:1/late" || r.ModRev != q.ModRev || r.Key != key {
		t.Fatalf("Resolve from etcd: %+v, %v", r, err)
	}
}

// A spec key whose value is not the value its ref names is not used.
func TestSpecMustMatchItsRef(t *testing.T) {
	k := keys.New("/x/")
	job := jobstest.WithDefaults(jobstest.HTTPJob("j", "@every 1s", "http://127.0.0.1:1/"))
	e := NewEntry("j@1", &job, nil, time.Now(), time.Now(), 1, runs.Schedule)
	op, _ := e.SpecOp(k)
	if _, err := decodeSpec(k, string(op.KeyBytes()), op.ValueBytes()); err != nil {
		t.Fatal(err)
	}
	other := jobstest.WithDefaults(jobstest.HTTPJob("j", "@every 1s", "http://127.0.0.1:2/"))
	o := NewEntry("j@1", &other, nil, time.Now(), time.Now(), 1, runs.Schedule)
	oop, _ := o.SpecOp(k)
	if _, err := decodeSpec(k, string(op.KeyBytes()), oop.ValueBytes()); err == nil {
		t.Error("accepted another spec's value under a ref")
	}
}

// One transaction writes each spec once, however many of its ops do.
func TestDedupSpecs(t *testing.T) {
	k := keys.New("/x/")
	ops := []clientv3.Op{
		clientv3.OpPut(k.Spec("a", "1"), "v"), clientv3.OpPut(k.Entry("a", "a@1"), "e1"),
		clientv3.OpPut(k.Spec("a", "1"), "v"), clientv3.OpPut(k.Spec("b", "1"), "w"),
		clientv3.OpPut(k.Entry("a", "a@2"), "e2"), clientv3.OpPut(k.Spec("b", "1"), "w"),
	}
	got := DedupSpecs(k, ops)
	var keysOut []string
	for _, op := range got {
		keysOut = append(keysOut, string(op.KeyBytes()))
	}
	want := []string{k.Spec("a", "1"), k.Entry("a", "a@1"), k.Spec("b", "1"), k.Entry("a", "a@2")}
	if len(keysOut) != len(want) {
		t.Fatalf("got %v, want %v", keysOut, want)
	}
	for i := range want {
		if keysOut[i] != want[i] {
			t.Fatalf("got %v, want %v", keysOut, want)
		}
	}
	if ks := SpecKeys(k, got); len(ks) != 2 {
		t.Errorf("SpecKeys: %v", ks)
	}
}
