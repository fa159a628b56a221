package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// Run is one request the witness got: one attempt of one run, as the
// target saw it, timed by the witness's own clock.
type Run struct {
	Job, RunID, Holder string
	Attempt, Slot      int
	Token              int64
	ScheduledAt        time.Time
	Start, End         time.Time // End is zero while in flight
	// Rejected: the token was lower than one already accepted for the
	// job and slot; the run was refused at once (409).
	Rejected bool
	// Superseded: a higher token for the same job and slot was accepted
	// while this run was in its handler; a real resource would refuse its
	// further writes, so from SupersededAt on it no longer counts.
	Superseded   bool
	SupersededAt time.Time
	// Cancelled: the scheduler went away (request context ended) before
	// the work was done.
	Cancelled bool
	Status    int
}

// Until is when the run stopped counting as holding the resource: its end,
// or the moment it was fenced off; now for one still in flight.
func (r *Run) Until(now time.Time) time.Time {
	end := r.End
	if end.IsZero() {
		end = now
	}
	if r.Superseded && r.SupersededAt.Before(end) {
		return r.SupersededAt
	}
	return end
}

// WitnessOptions configure a witness.
type WitnessOptions struct {
	// Fencing: refuse tokens lower than the highest accepted per job and
	// slot, and supersede older runs when a higher token arrives. Off, the
	// witness accepts anything (the positive control).
	Fencing bool
}

// Witness is the HTTP target of the suite. It serves POST /run with query
// parameters sleep (a duration: the run's work) and fail (N: the first
// attempt of about one run in N answers 500, so retries happen).
type Witness struct {
	opts WitnessOptions
	srv  *http.Server
	ln   net.Listener
	obs  *Observer

	mu       sync.Mutex
	runs     []*Run
	highest  map[string]int64 // job/slot -> highest accepted token
	inFlight map[string][]*Run
	rejected int
}

// StartWitness listens on a free loopback port.
func StartWitness(opts WitnessOptions) (*Witness, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &Witness{opts: opts, ln: ln, highest: map[string]int64{}, inFlight: map[string][]*Run{}}
	w.srv = &http.Server{Handler: http.HandlerFunc(w.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }()
	return w, nil
}

// URL of the run endpoint with the given query (e.g. "sleep=1s&fail=3").
func (w *Witness) URL(query string) string { return "http://" + w.ln.Addr().String() + "/run?" + query }

// Watch starts the witness's own watch of the scheduler's keys under
// prefix, straight on the etcd members (see Observer). The target URL must
// exist before the cluster's config can name it, so this comes after.
func (w *Witness) Watch(endpoints []string, prefix string) error {
	obs, err := StartObserver(endpoints, prefix)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.obs = obs
	w.mu.Unlock()
	return nil
}

// Observer is the witness's own view of etcd (nil before Watch).
func (w *Witness) Observer() *Observer {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.obs
}

// Close stops serving and watching.
func (w *Witness) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.srv.Shutdown(ctx)
	_ = w.srv.Close()
	if obs := w.Observer(); obs != nil {
		obs.Close()
	}
}

func (w *Witness) serve(rw http.ResponseWriter, r *http.Request) {
	now := time.Now()
	run, key := runFromRequest(r, now)
	if stale := w.admit(run, key, now); stale != "" {
		http.Error(rw, stale, http.StatusConflict)
		return
	}
	status := w.finish(run, key, runWork(r, run))
	rw.WriteHeader(status)
	fmt.Fprintf(rw, "%s attempt %d: %d\n", run.RunID, run.Attempt, status)
}

// runFromRequest reads the run from the scheduler's request headers, and
// the key of its job and slot that fencing tokens are compared under.
func runFromRequest(r *http.Request, now time.Time) (*Run, string) {
	run := &Run{
		Job:    r.Header.Get("X-Scheduler-Job"),
		RunID:  r.Header.Get("X-Scheduler-Run-Id"),
		Holder: r.Header.Get("X-Scheduler-Holder"),
		Start:  now,
	}
	run.Attempt, _ = strconv.Atoi(r.Header.Get("X-Scheduler-Attempt"))
	run.Slot, _ = strconv.Atoi(r.Header.Get("X-Scheduler-Slot"))
	run.Token, _ = strconv.ParseInt(r.Header.Get("X-Scheduler-Fencing-Token"), 10, 64)
	run.ScheduledAt, _ = time.Parse(runs.TimeFormat, r.Header.Get("X-Scheduler-Scheduled-At"))
	key := run.Job + "/" + strconv.Itoa(run.Slot)
	if shard, _, ok := strings.Cut(r.Header.Get("X-Scheduler-Shard"), "/"); ok {
		// Each shard index of a sharded job has slots of its own.
		key = run.Job + "#" + shard + "/" + strconv.Itoa(run.Slot)
	}
	return run, key
}

// admit records the run and, with fencing, refuses a token lower than the
// highest accepted under key (the refusal's message, "" when admitted) and
// supersedes the runs in flight that a higher token fences off.
func (w *Witness) admit(run *Run, key string, now time.Time) (stale string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs = append(w.runs, run)
	if w.opts.Fencing && run.Token < w.highest[key] {
		run.Rejected, run.End, run.Status = true, now, http.StatusConflict
		w.rejected++
		return fmt.Sprintf("stale fencing token %d < %d", run.Token, w.highest[key])
	}
	if w.opts.Fencing && run.Token > w.highest[key] {
		for _, old := range w.inFlight[key] {
			if old.Token < run.Token && !old.Superseded {
				old.Superseded, old.SupersededAt = true, now
			}
		}
	}
	w.highest[key] = max(w.highest[key], run.Token)
	w.inFlight[key] = append(w.inFlight[key], run)
	return ""
}

// runWork does what the query asks: sleep for the run's work (499 when the
// scheduler goes away first), and fail the first attempt of about one run
// in fail.
func runWork(r *http.Request, run *Run) int {
	status := http.StatusOK
	if d, err := time.ParseDuration(r.URL.Query().Get("sleep")); err == nil && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C: // the run's work
		case <-r.Context().Done():
			status = 499
		}
		t.Stop()
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("fail")); err == nil && n > 0 && run.Attempt == 1 && hash(run.RunID)%uint32(n) == 0 {
		status = http.StatusInternalServerError
	}
	return status
}

// finish records the run's end and takes it out of flight; a run fenced
// off meanwhile answers 409, as its writes were refused.
func (w *Witness) finish(run *Run, key string, status int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	run.End = time.Now()
	run.Cancelled = status == 499
	if run.Superseded && status == http.StatusOK {
		status = http.StatusConflict
	}
	run.Status = status
	list := w.inFlight[key]
	for i, o := range list {
		if o == run {
			w.inFlight[key] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	return status
}

func hash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// Runs is a copy of every request so far, in arrival order.
func (w *Witness) Runs() []Run {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Run, len(w.runs))
	for i, r := range w.runs {
		out[i] = *r
	}
	return out
}

// Rejected counts requests refused for a stale token.
func (w *Witness) Rejected() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rejected
}

// Count reports how many requests arrived so far.
func (w *Witness) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.runs)
}

// WaitRun waits until a request matching pred arrives, and returns it.
func (w *Witness) WaitRun(ctx context.Context, pred func(*Run) bool) (Run, error) {
	seen := 0
	for {
		w.mu.Lock()
		for ; seen < len(w.runs); seen++ {
			if pred(w.runs[seen]) {
				r := *w.runs[seen]
				w.mu.Unlock()
				return r, nil
			}
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return Run{}, errors.Join(errors.New("cluster: no matching run arrived"), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// InFlight lists the runs in a handler now, by start.
func (w *Witness) InFlight() []Run {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Run
	for _, l := range w.inFlight {
		for _, r := range l {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}
