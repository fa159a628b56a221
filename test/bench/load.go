package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/schedule"
	"github.com/etcdsched/scheduler/test/cluster"
)

// loadResult is one steady-load step: n jobs "@every 1s" against the
// witness, measured over a window after a warm-up.
type loadResult struct {
	Jobs        int                `json:"jobs"`
	Jitter      string             `json:"jitter"`
	Seconds     float64            `json:"seconds"`
	Outcomes    map[string]float64 `json:"outcomes"` // scheduler_runs_total deltas over the window
	Completed   float64            `json:"completed_runs"`
	RunsPerSec  float64            `json:"runs_per_s"`
	Revisions   int64              `json:"revisions"`
	WritesPerRn float64            `json:"writes_per_run"`
	Lateness    dist               `json:"lateness"` // witness receive time - (scheduled_at + the job's jitter)
	Reference   *dist              `json:"reference_lateness,omitempty"`
	RefRate     int                `json:"reference_runs_per_s,omitempty"`
	// CPU is each group's use over the window, in cores: where the two
	// cores of the machine went. "other" is the rest of the machine's busy
	// time (other processes on a shared host, interrupts), "steal" the
	// time the hypervisor gave the VM's cores to someone else.
	CPU map[string]float64 `json:"cpu_cores"`
	// EtcdCPUPerRun: the members' CPU time per completed run, in ms.
	EtcdCPUPerRun float64 `json:"etcd_cpu_ms_per_run"`
}

// loadJobs names the jobs after their step: runs of an earlier step still
// draining are not counted in this one, and no job comes back with the
// cursor an earlier step left (a returning job's gap is recorded as missed
// ticks, which is right for the scheduler and wrong for a benchmark).
func loadJobs(step string, n int, jitter time.Duration) []jobSpec {
	jobs := make([]jobSpec, n)
	for i := range jobs {
		jobs[i] = jobSpec{Name: fmt.Sprintf("%s-%05d", step, i), Schedule: "@every 1s", Jitter: jitter, MaxConcurrency: 2}
	}
	return jobs
}

// runLoad declares n jobs, lets them settle for warm, measures over window
// and removes them again. With refRate > 0 a bench-side timer sends refRate
// requests per second to the witness at due times of its own: the lateness
// of a bare timer and HTTP client on this machine at this moment.
func runLoad(ctx context.Context, e *env, n int, jitter, warm, window time.Duration, refRate int) (loadResult, error) {
	res := loadResult{Jobs: n, Jitter: jitter.String()}
	if err := e.compact(ctx); err != nil {
		return res, err
	}
	e.steps++
	step := fmt.Sprintf("s%d", e.steps)
	if err := e.reload(ctx, loadJobs(step, n, jitter)); err != nil {
		return res, err
	}
	defer func() {
		if err := e.reload(ctx, nil); err == nil {
			e.drain(ctx)
			e.forget(ctx)
		}
	}()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(warm):
	}
	if refRate > 0 {
		res.RefRate = refRate
	}
	w, err := measureLoadWindow(ctx, e, n, jitter, window, refRate)
	res.CPU = w.cpu
	if err != nil {
		return res, err
	}
	res.figure(w)
	lat, ref := lateness(e.w.Runs(), step+"-", w.t0, w.t1, jitter)
	res.Lateness = distOf(lat)
	if refRate > 0 {
		d := distOf(ref)
		res.Reference = &d
	}
	return res, nil
}

// loadWindow is what a load step reads at either end of its window.
type loadWindow struct {
	out0, out1 map[string]float64 // scheduler_runs_total
	rev0, rev1 int64
	t0, t1     time.Time
	cpu        map[string]float64 // each group's cores over the window
}

// measureLoadWindow reads the runs' outcomes, the revision and the CPU
// before and after window, with the reference timer (refRate > 0) and the
// profiles (e.profileDir set) running alongside.
func measureLoadWindow(ctx context.Context, e *env, n int, jitter, window time.Duration, refRate int) (loadWindow, error) {
	var w loadWindow
	refCtx, stopRef := context.WithCancel(ctx)
	var refWG sync.WaitGroup
	if refRate > 0 {
		refWG.Add(1)
		go func() { defer refWG.Done(); reference(refCtx, e.w, refRate, jitter) }()
	}
	var err error
	if w.out0, err = e.runsTotal(ctx); err != nil {
		stopRef()
		return w, err
	}
	if w.rev0, err = e.revision(ctx); err != nil {
		stopRef()
		return w, err
	}
	pids := e.pids()
	mark0 := markCPU(pids)
	w.t0 = time.Now()
	if e.profileDir != "" {
		refWG.Add(1)
		go func() { defer refWG.Done(); saveProfiles(ctx, e, e.profileDir, fmt.Sprintf("load-%d", n)) }()
	}
	select {
	case <-ctx.Done():
	case <-time.After(window):
	}
	out1, err1 := e.runsTotal(ctx)
	rev1, err2 := e.revision(ctx)
	w.out1, w.rev1, w.t1 = out1, rev1, time.Now()
	w.cpu = mark0.cores(markCPU(pids), w.t1.Sub(w.t0))
	stopRef()
	refWG.Wait()
	if err1 != nil || err2 != nil {
		return w, fmt.Errorf("bench: after the window: %v %v", err1, err2)
	}
	return w, nil
}

// figure fills the step's rates from its window.
func (res *loadResult) figure(w loadWindow) {
	res.Seconds = w.t1.Sub(w.t0).Seconds()
	res.Outcomes = outcomesDelta(w.out0, w.out1)
	res.Completed = res.Outcomes[string(runs.Succeeded)]
	if res.Completed > 0 {
		res.EtcdCPUPerRun = res.CPU["etcd"] * res.Seconds * 1000 / res.Completed
	}
	res.RunsPerSec = res.Completed / res.Seconds
	res.Revisions = w.rev1 - w.rev0
	if res.Completed > 0 {
		res.WritesPerRn = float64(res.Revisions) / res.Completed
	}
}

// lateness splits the witness's requests received in [from, to) into the
// scheduler's and the reference's, as receive time minus due time.
func lateness(all []cluster.Run, jobPrefix string, from, to time.Time, jitter time.Duration) (sched, ref []time.Duration) {
	for _, r := range all {
		if r.Start.Before(from) || !r.Start.Before(to) || r.ScheduledAt.IsZero() {
			continue
		}
		due := r.ScheduledAt.Add(schedule.Jitter(r.Job, r.ScheduledAt, jitter))
		switch {
		case strings.HasPrefix(r.Job, "ref-"):
			ref = append(ref, r.Start.Sub(due))
		case strings.HasPrefix(r.Job, jobPrefix):
			sched = append(sched, r.Start.Sub(due))
		}
	}
	return sched, ref
}

// reference behaves like an ideal scheduler: rate jobs "@every 1s" with the
// same jitter, each a goroutine that sleeps until its due time and posts to
// the witness with the scheduler's headers.
func reference(ctx context.Context, w *cluster.Witness, rate int, jitter time.Duration) {
	client := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for i := range rate {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := fmt.Sprintf("ref-%05d", i)
			tick := time.Now().Truncate(time.Second).Add(time.Second)
			for {
				due := tick.Add(schedule.Jitter(job, tick, jitter))
				t := time.NewTimer(time.Until(due))
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL(""), nil)
				if err != nil {
					return
				}
				req.Header.Set("X-Scheduler-Job", job)
				req.Header.Set("X-Scheduler-Run-Id", runs.ID(job, tick))
				req.Header.Set("X-Scheduler-Attempt", "1")
				req.Header.Set("X-Scheduler-Scheduled-At", tick.UTC().Format(runs.TimeFormat))
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
				tick = tick.Add(time.Second)
			}
		}()
	}
	wg.Wait()
}

// drain waits until the queue is empty (the removed jobs' last runs are
// done or recorded), at most a minute: an overloaded step leaves a backlog
// that would otherwise weigh on the next one.
func (e *env) drain(ctx context.Context) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := e.cli.Get(ctx, layout.Queue(), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err == nil && resp.Count == 0 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	logf("the queue did not drain within a minute; going on")
}

// pids groups the processes of the run: etcd members, replicas, and this
// program (witness, reference, observer).
func (e *env) pids() map[string][]int {
	out := map[string][]int{"bench": {os.Getpid()}}
	for _, m := range e.c.Members {
		if pid := m.Pid(); pid != 0 {
			out["etcd"] = append(out["etcd"], pid)
		}
	}
	for _, r := range e.c.Replicas {
		if pid := r.Pid(); pid != 0 {
			out["replicas"] = append(out["replicas"], pid)
		}
	}
	return out
}

// hostCPU is the machine's busy and stolen time from /proc/stat, in clock
// ticks.
type hostCPU struct{ busy, steal int64 }

func readHostCPU() hostCPU {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostCPU{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return hostCPU{}
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return hostCPU{busy: n(1) + n(2) + n(3) + n(6) + n(7), steal: n(8)}
}

// otherCores is the busy time over d not spent by the groups in cores,
// and the stolen time, both in cores.
func (h hostCPU) otherCores(later hostCPU, groups map[string]float64, d time.Duration) (other, steal float64) {
	if h.busy == 0 || later.busy == 0 || d <= 0 {
		return 0, 0
	}
	busy := float64(later.busy-h.busy) / clockTicks / d.Seconds()
	for _, c := range groups {
		busy -= c
	}
	return max(0, busy), float64(later.steal-h.steal) / clockTicks / d.Seconds()
}

// cpuMark is the CPU time of the measured processes and of the host at one
// moment: two marks give each group's use over the window between them.
type cpuMark struct {
	pids map[string][]int
	proc map[int]int64 // clock ticks by pid
	host hostCPU
}

func markCPU(pids map[string][]int) cpuMark {
	return cpuMark{pids: pids, proc: readAll(pids), host: readHostCPU()}
}

// cores is each group's use from m to end, a window of d, in cores, with
// "other" and "steal" for the rest of the host.
func (m cpuMark) cores(end cpuMark, d time.Duration) map[string]float64 {
	out := map[string]float64{}
	for group, ps := range m.pids {
		for _, pid := range ps {
			out[group] += float64(end.proc[pid]-m.proc[pid]) / clockTicks / d.Seconds()
		}
	}
	out["other"], out["steal"] = m.host.otherCores(end.host, out, d)
	return out
}

func readAll(pids map[string][]int) map[int]int64 {
	out := map[int]int64{}
	for _, ps := range pids {
		for _, pid := range ps {
			if st, err := readProc(pid); err == nil {
				out[pid] = st.CPUTicks
			}
		}
	}
	return out
}

// forget deletes the run records (with their unstarted markers), the
// chunk records of shed ticks and the cursors of the step's jobs, gone from
// the config: each step starts from the same store. Left in place, the
// steps' records (up to history_limit per job, over 100,000 keys after the
// default steps) made each later step run on a larger store than its own
// jobs would leave. Each prefix goes forgetPage keys a transaction: one
// delete of a long overload's 589,308 records kept etcd applying for tens
// of seconds and answered "request timed out".
func (e *env) forget(ctx context.Context) {
	for _, p := range []string{layout.Runs(), layout.UnstartedMarks(), layout.Shed(), layout.Jobs()} {
		if n, err := deletePaged(ctx, e.cli, p, forgetPage); err != nil {
			logf("forgetting %s (%d keys deleted): %v", p, n, err)
		}
	}
}

// forgetPage bounds the keys of one of forget's deletes.
const forgetPage = 10000

// deletePaged deletes every key under prefix, at most page keys a
// transaction: it reads the next page's keys (keys only, from etcd's
// index) and deletes from the first to the last of them. It returns how
// many it deleted.
func deletePaged(ctx context.Context, cli *clientv3.Client, prefix string, page int64) (int64, error) {
	var deleted int64
	end := clientv3.GetPrefixRangeEnd(prefix)
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(page))
		if err != nil {
			return deleted, err
		}
		if len(resp.Kvs) == 0 {
			return deleted, nil
		}
		first, last := string(resp.Kvs[0].Key), string(resp.Kvs[len(resp.Kvs)-1].Key)
		del, err := cli.Delete(ctx, first, clientv3.WithRange(last+"\x00"))
		if err != nil {
			return deleted, err
		}
		deleted += del.Deleted
		if !resp.More {
			return deleted, nil
		}
	}
}

// compact compacts etcd at its current revision, as a deployment's
// auto-compaction would: without it every step would run on a store
// holding every earlier step's revisions (hundreds of MB in a few minutes).
func (e *env) compact(ctx context.Context) error {
	rev, err := e.revision(ctx)
	if err != nil {
		return err
	}
	if _, err := e.cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("bench: compact: %w", err)
	}
	return nil
}

func outcomesDelta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
