package worker

import (
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Fair order waits for elders however long (strict), so an elder that
// cannot start must not count: an entry naming a spec no replica has
// waits for the spec until its starting deadline, and the runs after it
// would wait as long behind it. A resolved run due after it takes the
// room it finds.
func TestAnUnresolvedElderHoldsNobodyBack(t *testing.T) {
	layout := keys.New("/unresolved/")
	job := jobstest.WithDefaults(jobstest.Job("a", "@every 1s"))
	job.Overlap, job.QueueLimit = config.OverlapQueue, 5
	// The same job as another config had it: another spec, another ref.
	other := jobstest.WithDefaults(jobstest.HTTPJob("a", "@every 1s", "http://127.0.0.1:2/"))
	other.Overlap, other.QueueLimit = config.OverlapQueue, 5
	now := time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC)
	elder := queue.NewEntry(runs.ID("a", now), &other, nil, now, now, 1, runs.Schedule)
	younger := queue.NewEntry(runs.ID("a", now.Add(time.Second)), &job, nil, now.Add(time.Second), now.Add(time.Second), 1, runs.Schedule)
	if elder.SpecRef == younger.SpecRef {
		t.Fatal("the two specs share a ref: the test needs the elder's to be unknown")
	}
	kvs := []*mvccpb.KeyValue{
		{Key: []byte(layout.Entry("a", elder.RunID)), Value: []byte(elder.Encode()), ModRevision: 1},
		{Key: []byte(layout.Entry("a", younger.RunID)), Value: []byte(younger.Encode()), ModRevision: 2},
	}
	op, _ := younger.SpecOp(layout) // only the younger's spec is known
	specs := queue.NewSpecs(layout, nil, nil)
	specs.Reset([]*mvccpb.KeyValue{{Key: op.KeyBytes(), Value: op.ValueBytes()}}, 2)
	view := queue.NewView(layout, nil, specs)
	view.Reset(kvs, 2)
	if e := view.Find(elder.RunID); e == nil || e.Resolved() {
		t.Fatalf("the elder is %v in the view, want there and unresolved", e)
	}

	w := &fairOrder{d: Deps{Queue: view, Slots: roomSlots{room: 1}, ClaimLead: 25 * time.Millisecond}, rtt: &claimLatency{}}
	if el := w.yieldTo(view.Find(younger.RunID), now.Add(time.Second)); el.full != nil {
		t.Errorf("the resolved run yields %s to an elder whose spec is unknown, want it to take the room", el.full)
	}
}
