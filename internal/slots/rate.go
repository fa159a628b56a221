package slots

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/wire"
)

// A rate window of count N is N etcd keys, its places
// (rate/<scope>/<name>/<i>), each holding the start time of the last run
// admitted through it. A claim takes a place whose time is at least
// Per + RateMargin before the run's start, comparing the place's
// ModRevision as seen (CreateRevision 0 when absent), and stamps the start
// in the same transaction as the slots. Each place is thus used at most
// once per Per, so no interval of length Per holds more than N starts
// (docs/design-admission.md, "Rate windows", has the argument). Places are bound to no lease: a
// crashed replica's admissions keep counting.

// Timing bounds the window relies on. A start is stamped before it happens
// and on the claiming replica's clock; the margin covers the difference.
const (
	// MaxClockSkew is how far apart two replicas' clocks may be.
	MaxClockSkew = 50 * time.Millisecond
	// MaxStartLatency is how long after its stamped start a run may
	// begin; a worker that would start it later gives it up unstarted,
	// so a stamp is never older than MaxStartLatency at its run's start.
	MaxStartLatency = 250 * time.Millisecond
	// RateMargin is added to Per before a place is reused: two starts
	// through one place are then at least Per apart in real time.
	RateMargin = 2*MaxClockSkew + MaxStartLatency
)

// Rate is one sliding window a claim must get a place in.
type Rate struct {
	Scope string // keys.RateJob or keys.RateResource
	Name  string // the job or the resource
	Count int
	Per   time.Duration
}

// Window names the rate window in messages: "resource github-api (20 per 2s)",
// the period as the config writes it ("1m", not "1m0s").
func (r Rate) Window() string {
	return fmt.Sprintf("%s %s (%d per %s)", r.Scope, r.Name, r.Count, config.ShortDuration(r.Per))
}

// Limits that can refuse a claim.
const (
	LimitJob      = "job"
	LimitKey      = "key"
	LimitResource = "resource"
	LimitRate     = "rate"
)

// FullError says which limit refused a claim; it is ErrFull.
type FullError struct {
	Limit string // LimitJob, LimitKey, LimitResource or LimitRate
	Name  string // the job, "<job>/<key>", the resource, or the window
	// Slots is the limit of a job, key or resource.
	Slots int
	// Until is when a full rate window's first place frees.
	Until time.Time
	// View: the refusal came from this replica's view, not from a read of
	// etcd; the view may not yet have seen a slot freed (Request.Confirm).
	View bool
}

func (e *FullError) Error() string {
	switch e.Limit {
	case LimitRate:
		if e.Until.IsZero() { // judged from the view, which counts places only
			return fmt.Sprintf("rate window %s full", e.Name)
		}
		return fmt.Sprintf("rate window %s full until %s", e.Name, e.Until.UTC().Format(time.RFC3339Nano))
	case LimitKey:
		job, key := keys.SplitSlotGroup(e.Name)
		return fmt.Sprintf("job %s key %s: all %d slots taken", job, key, e.Slots)
	}
	return fmt.Sprintf("%s %s: all %d slots taken", e.Limit, e.Name, e.Slots)
}

func (e *FullError) Unwrap() error { return ErrFull }

// stamp is what a rate place holds.
type stamp struct {
	At     time.Time `json:"at"`
	RunID  string    `json:"run_id"`
	Holder string    `json:"holder,omitempty"`
}

// place is one rate place as last seen: modRev 0 means absent.
type place struct {
	at     time.Time
	runID  string
	modRev int64
}

// ratePick is the place chosen in one window.
type ratePick struct {
	key    string
	modRev int64
}

func (s *Semaphore) rateKey(r Rate, i int) string {
	return s.layout.RatePlace(r.Scope, r.Name, i)
}

// pickRates chooses a free place in every window, judged at start, from
// places (by key); a window without one is a FullError with its Until.
func (s *Semaphore) pickRates(rates []Rate, start time.Time, places func(key string) (place, bool)) ([]ratePick, error) {
	picks := make([]ratePick, 0, len(rates))
	for _, r := range rates {
		var free []ratePick
		var until time.Time
		for i := range r.Count {
			k := s.rateKey(r, i)
			p, ok := places(k)
			if !ok {
				free = append(free, ratePick{key: k})
				continue
			}
			reuse := p.at.Add(r.Per + RateMargin)
			if !reuse.After(start) {
				free = append(free, ratePick{key: k, modRev: p.modRev})
			} else if until.IsZero() || reuse.Before(until) {
				until = reuse
			}
		}
		if len(free) == 0 {
			return nil, &FullError{Limit: LimitRate, Name: r.Window(), Until: until}
		}
		picks = append(picks, free[rand.IntN(len(free))])
	}
	return picks, nil
}

// rateOps are the compares and puts that take the picked places.
func rateOps(picks []ratePick, v stamp) ([]clientv3.Cmp, []clientv3.Op) {
	b, _ := json.Marshal(v) // plain data
	cmps := make([]clientv3.Cmp, len(picks))
	ops := make([]clientv3.Op, len(picks))
	for i, p := range picks {
		if p.modRev == 0 {
			cmps[i] = clientv3.Compare(clientv3.CreateRevision(p.key), "=", 0)
		} else {
			cmps[i] = clientv3.Compare(clientv3.ModRevision(p.key), "=", p.modRev)
		}
		// No lease: a crash must not free the place early.
		ops[i] = clientv3.OpPut(p.key, string(b))
	}
	return cmps, ops
}

func decodePlace(kv *mvccpb.KeyValue) place {
	var st stamp
	if err := json.Unmarshal(kv.Value, &st); err != nil || st.At.IsZero() {
		// Unreadable: treat it as stamped now-ish (far future), so it is
		// never taken for free; the window admits fewer, never more.
		return place{at: time.Unix(1<<40, 0), modRev: kv.ModRevision}
	}
	return place{at: st.At, runID: st.RunID, modRev: kv.ModRevision}
}

// placesFromView looks places up in the watch view.
func (s *Semaphore) placesFromView() func(string) (place, bool) {
	s.mu.Lock()
	snapshot := make(map[string]place, len(s.rates))
	for k, p := range s.rates {
		snapshot[k] = p
	}
	s.mu.Unlock()
	return func(k string) (place, bool) { p, ok := snapshot[k]; return p, ok }
}

// placesFromRead looks places up in a failed claim's read of the windows.
func placesFromRead(kvs []*mvccpb.KeyValue) func(string) (place, bool) {
	m := make(map[string]place, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = decodePlace(kv)
	}
	return func(k string) (place, bool) { p, ok := m[k]; return p, ok }
}

// WindowInfo is one rate window as GET /api/v1/slots shows it.
type WindowInfo = wire.Window

// Windows describes each of rates at now from the view: how many places
// hold a start that still counts (within Per + RateMargin) and the oldest
// of those starts.
func (s *Semaphore) Windows(rates []Rate, now time.Time) []WindowInfo {
	places := s.placesFromView()
	out := make([]WindowInfo, 0, len(rates))
	for _, r := range rates {
		w := WindowInfo{Window: r.Scope + "/" + r.Name, Count: r.Count, Per: config.ShortDuration(r.Per)}
		for i := range r.Count {
			p, ok := places(s.rateKey(r, i))
			if !ok || !p.at.Add(r.Per+RateMargin).After(now) {
				continue
			}
			w.InUse++
			if w.Oldest.IsZero() || p.at.Before(w.Oldest) {
				w.Oldest = p.at.UTC()
			}
		}
		out = append(out, w)
	}
	return out
}

// FreePlaces is how many places of r the view shows free for a start at.
func (s *Semaphore) FreePlaces(r Rate, at time.Time) int {
	places := s.placesFromView()
	n := 0
	for i := range r.Count {
		if p, ok := places(s.rateKey(r, i)); !ok || !p.at.Add(r.Per+RateMargin).After(at) {
			n++
		}
	}
	return n
}
