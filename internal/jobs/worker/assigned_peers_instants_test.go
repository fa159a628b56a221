package worker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// BenchmarkPeerScan is a scan of the peer view after a change, as at a
// burst of 1,000 jobs at five replicas: four peers' assignments of ~15
// runs for each of the 12 instants assigned ahead, one instant due.
func BenchmarkPeerScan(b *testing.B) {
	layout := keys.New("/bench/")
	t0 := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	v := newPeerView(layout, clock, "self", 25*time.Millisecond, func() {})
	var evs []*clientv3.Event
	for i := range 12 {
		at := t0.Add(time.Duration(i) * time.Second)
		for p := range 4 {
			for g := range 14 {
				key := layout.Assignment(keys.Incarnation(fmt.Sprintf("peer%d", p), 1), at, fmt.Sprintf("g%d", g))
				evs = append(evs, &clientv3.Event{Type: clientv3.EventTypePut, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(`["j"]`), ModRevision: 1}})
			}
		}
	}
	v.Apply(evs, 1)
	turn := func(*peerAssignment, bool) time.Time { return clock.Now().Add(time.Hour) }
	b.ResetTimer()
	for range b.N {
		v.mu.Lock()
		v.changed, v.scanned = true, time.Time{}
		v.mu.Unlock()
		v.due(clock.Now().Add(peerScanGap), time.Hour, turn)
	}
}

// The peer view's index walks the instants come, each once, in order,
// and names the first to come; an instant whose assignments all went is
// gone from it.
func TestPeerInstantsWalkTheInstantsComeInOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	var x peerInstants
	add := func(key string, s int) *peerAssignment {
		p := &peerAssignment{key: key, at: t0.Add(time.Duration(s) * time.Second)}
		x.put(p)
		return p
	}
	add("c", 2)
	a := add("a", 0)
	add("b", 1)
	add("b2", 1)
	add("b2", 1) // put again: replaced, not doubled
	later := add("d", 5)
	var walked []string
	next := x.upTo(t0.Add(time.Second), func(p *peerAssignment) { walked = append(walked, p.key) })
	slices.Sort(walked[1:]) // one instant's assignments come in any order
	if want := []string{"a", "b", "b2"}; !slices.Equal(walked, want) {
		t.Errorf("walked %v up to t0+1s, want %v", walked, want)
	}
	if !next.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("first instant to come %v, want t0+2s", next)
	}
	x.remove(a)
	x.remove(later)
	x.remove(later) // twice: harmless
	walked = nil
	next = x.upTo(t0.Add(time.Hour), func(p *peerAssignment) { walked = append(walked, p.key) })
	if len(walked) != 3 || !next.IsZero() || len(x.order) != 2 {
		t.Errorf("after removing a and d: walked %v, next %v, instants %d; want b, b2, c, none to come, 2 instants", walked, next, len(x.order))
	}
}

// A scan judges no assignment of an instant to come, and looks again at
// that instant.
func TestAPeerScanLooksAgainAtTheFirstInstantToCome(t *testing.T) {
	layout := keys.New("/coming/")
	t0 := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	v := newPeerView(layout, clock, "self", 25*time.Millisecond, func() {})
	peer := keys.Incarnation("peer", 1)
	put := func(at time.Time) *clientv3.Event {
		key := layout.Assignment(peer, at, "g")
		return &clientv3.Event{Type: clientv3.EventTypePut, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(`["j"]`), ModRevision: 1}}
	}
	v.Apply([]*clientv3.Event{put(t0.Add(3 * time.Second)), put(t0.Add(2 * time.Second))}, 1)
	judged := 0
	turn := func(*peerAssignment, bool) time.Time { judged++; return clock.Now().Add(time.Hour) }
	due, next, _ := v.due(clock.Now(), time.Hour, turn)
	if judged != 0 || len(due) != 0 || !next.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("before both instants: judged %d, due %d, next %v; want none judged, next t0+2s", judged, len(due), next)
	}
	clock.Advance(2 * time.Second)
	if _, next, _ = v.due(clock.Now(), time.Hour, turn); judged != 1 || !next.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("at t0+2s: judged %d, next %v; want 1, t0+3s", judged, next)
	}
}
