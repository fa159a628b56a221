package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/test/cluster"
)

// prefix is the scheduler's key prefix in every bench cluster.
const prefix = "/scheduler/"

// layout is the key layout under prefix.
var layout = keys.New(prefix)

// settings are the cluster-wide parts of the scheduler config.
type settings struct {
	SessionTTL  time.Duration
	MaxParallel int
	Replicas    int // scheduler processes; 0: cluster's default (3)
	// Fsync: the etcd members fsync their log (cluster.Options.Fsync).
	Fsync bool
}

// jobSpec is one job of a generated config.
type jobSpec struct {
	Name, Schedule string
	Jitter         time.Duration
	// MaxConcurrency (default 1): jittered ticks of one job can fall
	// milliseconds apart, and with one slot the later one is skipped.
	MaxConcurrency int
	// SkippedHistory, when set, is the job's skipped_history_limit: the
	// failover step reads each skipped tick's record to say why it did not
	// run, and the default 20 prunes most of a TTL's worth of them.
	SkippedHistory int
	// DefaultDeadlines leaves timeout and starting_deadline at their
	// defaults (the burst scenario: a tick too late is recorded as a user's
	// config would record it).
	DefaultDeadlines bool
	// Shards makes the job sharded (docs/design-sharded.md).
	Shards int
}

// configYAML writes the scheduler config for jobs, all HTTP jobs against url.
func configYAML(s settings, url string, jobs []jobSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, `cluster:
  etcd:
    prefix: %s
    dial_timeout: 5s
  session_ttl: %s
  lease_margin: 1s
worker:
  max_parallel: %d
  shutdown_grace: 2s
`, prefix, s.SessionTTL, s.MaxParallel)
	if len(jobs) == 0 {
		b.WriteString("jobs: []\n")
		return b.String()
	}
	b.WriteString("jobs:\n")
	for _, j := range jobs {
		fmt.Fprintf(&b, "  - name: %s\n    schedule: %q\n", j.Name, j.Schedule)
		if j.Jitter > 0 {
			fmt.Fprintf(&b, "    jitter: %s\n", j.Jitter)
		}
		if j.MaxConcurrency > 1 {
			fmt.Fprintf(&b, "    max_concurrency: %d\n", j.MaxConcurrency)
		}
		if j.Shards > 0 {
			fmt.Fprintf(&b, "    shards: %d\n", j.Shards)
		}
		if j.SkippedHistory > 0 {
			fmt.Fprintf(&b, "    skipped_history_limit: %d\n", j.SkippedHistory)
		}
		if !j.DefaultDeadlines {
			b.WriteString("    timeout: 10s\n    starting_deadline: 30s\n")
		}
		fmt.Fprintf(&b, "    http: {method: POST, url: %q}\n", url)
	}
	return b.String()
}

// env is a running cluster, its witness target, and a client straight to
// the etcd members.
type env struct {
	dir      string
	settings settings
	c        *cluster.Cluster
	w        *cluster.Witness
	cli      *clientv3.Client
	// profileDir, when set, receives leader profiles taken during each
	// load step.
	profileDir string
	profileTag string // names a further cluster's profiles (burst: "5replicas")
	// profileSeconds is how long each CPU profile lasts (-pprof-seconds).
	profileSeconds int
	steps          int // load steps so far: each names its jobs anew
}

// startEnv starts the witness, then a cluster whose config holds jobs.
func startEnv(ctx context.Context, bins cluster.Binaries, dir string, s settings, jobs func(url string) []jobSpec) (*env, error) {
	// A data dir left by an earlier run would make the members rejoin an
	// old cluster.
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	w, err := cluster.StartWitness(cluster.WitnessOptions{})
	if err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Binaries: bins, Replicas: s.Replicas, Fsync: s.Fsync,
		Config: configYAML(s, w.URL(""), jobs(w.URL("")))})
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("%w\n%s", err, cluster.TailLogs(dir, 20))
	}
	cli, err := c.Client()
	if err != nil {
		c.Close()
		w.Close()
		return nil, err
	}
	return &env{dir: dir, settings: s, c: c, w: w, cli: cli}, nil
}

func (e *env) close() {
	_ = e.cli.Close()
	e.c.Close()
	e.w.Close()
}

// observe starts the witness's watch of every scheduler key (leaders,
// cursor writes). Only failover needs it: a watch of the whole prefix costs
// etcd and this process CPU the load steps should not pay.
func (e *env) observe() (*cluster.Observer, error) {
	if obs := e.w.Observer(); obs != nil {
		return obs, nil
	}
	if err := e.w.Watch(e.c.Endpoints(), prefix); err != nil {
		return nil, err
	}
	return e.w.Observer(), nil
}

// reload rewrites the config with jobs and waits until every running replica
// reports the new config hash.
func (e *env) reload(ctx context.Context, jobs []jobSpec) error {
	before := e.hashes(ctx)
	path := cluster.ConfigPath(e.dir)
	text := configYAML(e.settings, e.w.URL(""), jobs)
	if old, err := os.ReadFile(path); err == nil && string(old) == text {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	for _, r := range e.c.Replicas {
		if r.Running() {
			_ = r.Hangup()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		now := e.hashes(ctx)
		// Each replica must report a new hash: each reloads on its own.
		done := len(now) > 0
		for id, h := range now {
			if h == before[id] {
				done = false
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: replicas did not reload (hashes before %v, now %v): %w", before, now, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *env) hashes(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, r := range e.c.Replicas {
		if !r.Running() {
			continue
		}
		if st, err := r.API.Status(ctx); err == nil {
			out[r.ID] = st.ConfigHash
		}
	}
	return out
}

// revision is etcd's current revision: one per transaction that wrote.
func (e *env) revision(ctx context.Context) (int64, error) {
	resp, err := e.cli.Get(ctx, "bench-revision-probe")
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// runsTotal sums scheduler_runs_total by outcome over the running replicas.
func (e *env) runsTotal(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	for _, r := range e.c.Replicas {
		if !r.Running() || r.Frozen() {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL()+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("bench: metrics of %s: %w", r.ID, err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "scheduler_runs_total{") {
				continue
			}
			i := strings.Index(line, `outcome="`)
			sp := strings.LastIndexByte(line, ' ')
			if i < 0 || sp < 0 {
				continue
			}
			outcome := line[i+len(`outcome="`):]
			outcome = outcome[:strings.IndexByte(outcome, '"')]
			v, _ := strconv.ParseFloat(line[sp+1:], 64)
			out[outcome] += v
		}
		resp.Body.Close()
	}
	return out, nil
}

// procStat is what /proc says about one process.
type procStat struct {
	RSSBytes int64
	HWMBytes int64 // peak RSS
	CPUTicks int64 // utime + stime, in clock ticks
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

func readProc(pid int) (procStat, error) {
	var ps procStat
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ps, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		kb := func(rest string) int64 {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n * 1024
		}
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			ps.RSSBytes = kb(rest)
		}
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			ps.HWMBytes = kb(rest)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ps, err
	}
	// The command name may hold spaces; fields are counted after its ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) > 12 {
		ut, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		ps.CPUTicks = ut + st
	}
	return ps, nil
}

// cpuShare samples pids over d and returns each one's CPU use as a share
// of one core.
func cpuShare(ctx context.Context, pids []int, d time.Duration) ([]float64, error) {
	before := make([]procStat, len(pids))
	for i, pid := range pids {
		ps, err := readProc(pid)
		if err != nil {
			return nil, err
		}
		before[i] = ps
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
	}
	elapsed := time.Since(start).Seconds()
	out := make([]float64, len(pids))
	for i, pid := range pids {
		ps, err := readProc(pid)
		if err != nil {
			return nil, err
		}
		out[i] = float64(ps.CPUTicks-before[i].CPUTicks) / clockTicks / elapsed
	}
	return out, nil
}

// leader waits for the scheduler leader.
func (e *env) leader(ctx context.Context) (*cluster.Replica, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return e.c.WaitLeader(ctx)
}
