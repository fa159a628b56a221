package cluster

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcdsched/scheduler/internal/keys"
)

// Observer watches a scheduler's keys straight on the etcd members, with
// its own client, and keeps per revision what safety is about: how many
// slot keys each job and resource has, who leads the election, and when the
// leader writes a job's cursor (a leader at work).
type Observer struct {
	cli    *clientv3.Client
	prefix string
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	slots      map[string]map[string]bool // SlotGroup -> keys held
	maxSlots   map[string]SlotPeak
	election   map[string]electionKey
	leader     string
	leaders    []LeaderChange
	cursors    []time.Time // when a cursor write was seen
	clock      []revTime   // when each revision was seen, in order
	lastRev    int64
	revisions  int
	watchFails int
}

// SlotPeak is the most slot keys a job (or resource) had at one revision.
type SlotPeak struct {
	Count int
	Rev   int64
	At    time.Time
}

// LeaderChange: from At on, the election key with the lowest create
// revision belongs to ID ("" when there is no key at all).
type LeaderChange struct {
	At  time.Time
	Rev int64
	ID  string
}

type electionKey struct {
	createRev int64
	id        string
}

// StartObserver reads the current state and watches from there.
func StartObserver(endpoints []string, prefix string) (*Observer, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Observer{cli: cli, prefix: prefix, cancel: cancel, done: make(chan struct{}),
		maxSlots: map[string]SlotPeak{}}
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	err = o.reread(rctx)
	rcancel()
	if err != nil {
		cancel()
		_ = cli.Close()
		return nil, err
	}
	go o.run(ctx)
	return o, nil
}

// Close stops watching.
func (o *Observer) Close() {
	o.cancel()
	<-o.done
	_ = o.cli.Close()
}

func (o *Observer) reread(ctx context.Context) error {
	resp, err := o.cli.Get(ctx, o.prefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.slots = map[string]map[string]bool{}
	o.election = map[string]electionKey{}
	for _, kv := range resp.Kvs {
		o.applyLocked(mvccpb.PUT, kv)
	}
	o.lastRev = resp.Header.Revision
	o.sampleLocked(resp.Header.Revision, time.Now())
	return nil
}

// run watches from the last revision seen; on compaction or a closed
// channel it reads everything again.
func (o *Observer) run(ctx context.Context) {
	defer close(o.done)
	for ctx.Err() == nil {
		o.mu.Lock()
		from := o.lastRev + 1
		o.mu.Unlock()
		wch := o.cli.Watch(clientv3.WithRequireLeader(ctx), o.prefix, clientv3.WithPrefix(), clientv3.WithRev(from))
		for resp := range wch {
			if resp.Err() != nil {
				break
			}
			now := time.Now()
			o.mu.Lock()
			for i, ev := range resp.Events {
				o.applyLocked(ev.Type, ev.Kv)
				// A transaction's events share a revision: sample after
				// the last of them.
				if i == len(resp.Events)-1 || resp.Events[i+1].Kv.ModRevision != ev.Kv.ModRevision {
					o.sampleLocked(ev.Kv.ModRevision, now)
					o.lastRev = ev.Kv.ModRevision
				}
			}
			o.mu.Unlock()
		}
		if ctx.Err() != nil {
			return
		}
		o.mu.Lock()
		o.watchFails++
		o.mu.Unlock()
		for ctx.Err() == nil {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := o.reread(rctx)
			cancel()
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func (o *Observer) applyLocked(typ mvccpb.Event_EventType, kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	layout := keys.New(o.prefix)
	if resource, name, _, ok := layout.ParseSlot(key); ok {
		group := SlotGroup(resource, name)
		if o.slots[group] == nil {
			o.slots[group] = map[string]bool{}
		}
		if typ == mvccpb.DELETE {
			delete(o.slots[group], key)
		} else {
			o.slots[group][key] = true
		}
		return
	}
	_, cursor := layout.CursorJob(key)
	rest := strings.TrimPrefix(key, o.prefix)
	switch {
	case strings.HasPrefix(key, layout.Election()):
		if typ == mvccpb.DELETE {
			delete(o.election, rest)
			return
		}
		var v struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(kv.Value, &v)
		o.election[rest] = electionKey{createRev: kv.CreateRevision, id: v.ID}
	case cursor && typ == mvccpb.PUT:
		o.cursors = append(o.cursors, time.Now())
	}
}

// revTime: revision rev was seen at unix nanoseconds at (two words a
// revision, so a long benchmark's clock stays small).
type revTime struct{ rev, at int64 }

func (o *Observer) sampleLocked(rev int64, now time.Time) {
	o.revisions++
	if n := len(o.clock); n == 0 || o.clock[n-1].rev < rev {
		o.clock = append(o.clock, revTime{rev, now.UnixNano()})
	}
	for group, keys := range o.slots {
		if p := o.maxSlots[group]; len(keys) > p.Count {
			o.maxSlots[group] = SlotPeak{Count: len(keys), Rev: rev, At: now}
		}
	}
	leader, low := "", int64(0)
	for _, k := range o.election {
		if low == 0 || k.createRev < low {
			leader, low = k.id, k.createRev
		}
	}
	if leader != o.leader || len(o.leaders) == 0 {
		o.leader = leader
		o.leaders = append(o.leaders, LeaderChange{At: now, Rev: rev, ID: leader})
	}
}

// MaxSlots is, per job and resource (SlotGroup), the most slot keys seen
// at one revision.
func (o *Observer) MaxSlots() map[string]SlotPeak {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]SlotPeak, len(o.maxSlots))
	for k, v := range o.maxSlots {
		out[k] = v
	}
	return out
}

// Leaders is the history of election leaders.
func (o *Observer) Leaders() []LeaderChange {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]LeaderChange(nil), o.leaders...)
}

// FirstCursorWriteAfter is when the first cursor write after t was seen
// (a leader materializing ticks), or zero.
func (o *Observer) FirstCursorWriteAfter(t time.Time) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := sort.Search(len(o.cursors), func(i int) bool { return o.cursors[i].After(t) })
	if i == len(o.cursors) {
		return time.Time{}
	}
	return o.cursors[i]
}

// RevisionTime is when the watch first saw a revision at or after rev: the
// observer's clock for a key's create or mod revision (a record's first
// write). Zero when no such revision was seen. After a re-read it is the
// re-read's time, an upper bound.
func (o *Observer) RevisionTime(rev int64) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := sort.Search(len(o.clock), func(i int) bool { return o.clock[i].rev >= rev })
	if i == len(o.clock) {
		return time.Time{}
	}
	return time.Unix(0, o.clock[i].at)
}

// Revisions counts the revisions sampled; WatchRestarts how often the
// watch had to be re-established.
func (o *Observer) Revisions() (revisions, watchRestarts int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.revisions, o.watchFails
}

// SlotGroup names the slot keys of one job ("job <name>") or one shared
// resource ("resource <name>") in MaxSlots.
func SlotGroup(resource bool, name string) string {
	if resource {
		return "resource " + name
	}
	return "job " + name
}
