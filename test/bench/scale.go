package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

type scaleResult struct {
	Jobs        int `json:"jobs"`
	EverySecond int `json:"jobs_every_second"`
	// ColdStartMs: cluster start (etcd too) -> first run at the witness;
	// RestartMs: every replica killed and started again -> first run.
	ColdStartMs float64 `json:"cold_start_to_first_run_ms"`
	RestartMs   float64 `json:"restart_to_first_run_ms"`
	Leader      string  `json:"leader"`
	LeaderRSS   int64   `json:"leader_rss_bytes"`
	LeaderPeak  int64   `json:"leader_peak_rss_bytes"` // VmHWM: the start's peak
	FollowerRSS int64   `json:"follower_rss_bytes"`    // the larger follower
	EtcdRSS     int64   `json:"etcd_member_rss_bytes"`
	LeaderCPU   float64 `json:"leader_cpu_share"`   // of one core, steady state
	FollowerCPU float64 `json:"follower_cpu_share"` // the busier follower
	CPUWindow   float64 `json:"cpu_window_s"`
	APIJobs     dist    `json:"api_jobs_latency"`
	APIBytes    int64   `json:"api_jobs_bytes"`
	APIHealthz  dist    `json:"api_healthz_latency"`
}

func scaleJobs(n int) []jobSpec {
	every := max(1, n/1000)
	jobs := make([]jobSpec, n)
	for i := range jobs {
		if i < every {
			jobs[i] = jobSpec{Name: fmt.Sprintf("sec-%06d", i), Schedule: "@every 1s"}
		} else {
			jobs[i] = jobSpec{Name: fmt.Sprintf("hourly-%06d", i), Schedule: fmt.Sprintf("%d * * * *", i%60)}
		}
	}
	return jobs
}

// scale declares n jobs (n/1000 every second, the rest hourly, spread over
// the minutes) on a cluster of its own.
func scale(ctx context.Context, f flags, bins cluster.Binaries, n int) (report, error) {
	res := scaleResult{Jobs: n, EverySecond: max(1, n/1000)}
	jobs := scaleJobs(n)
	logf("scale: %d jobs: starting a cluster", n)
	t0 := time.Now()
	e, err := startEnv(ctx, bins, filepath.Join(f.dir, fmt.Sprintf("scale-%d", n)), settings{SessionTTL: 5 * time.Second, MaxParallel: 256},
		func(string) []jobSpec { return jobs })
	if err != nil {
		return report{}, err
	}
	defer e.close()
	first, err := firstRunAfter(ctx, e.w, t0, 3*time.Minute)
	if err != nil {
		return report{}, err
	}
	res.ColdStartMs = ms(first.Sub(t0))
	logf("scale: %d jobs: cold start to first run %.0f ms", n, res.ColdStartMs)

	if res.RestartMs, err = restartToFirstRun(ctx, e); err != nil {
		return report{}, err
	}
	logf("scale: %d jobs: restart to first run %.0f ms", n, res.RestartMs)
	if err := waitReplicasReady(ctx, e); err != nil {
		return report{}, err
	}
	time.Sleep(5 * time.Second) // past the start's own work

	leader, err := e.leader(ctx)
	if err != nil {
		return report{}, err
	}
	res.Leader = leader.ID
	if f.pprof {
		// Before the API calls, whose responses would dominate the heap.
		saveHeapProfiles(ctx, e, f.dir, n)
	}
	if err := res.measureFootprint(ctx, e, leader, min(f.duration, 15*time.Second)); err != nil {
		return report{}, err
	}
	logf("scale: %d jobs: leader RSS %s (peak %s), CPU %s; follower RSS %s, CPU %s", n, mib(res.LeaderRSS), mib(res.LeaderPeak), pct(res.LeaderCPU), mib(res.FollowerRSS), pct(res.FollowerCPU))
	if err := res.measureAPI(ctx, leader); err != nil {
		return report{}, err
	}
	logf("scale: %d jobs: GET /api/v1/jobs %s, %s", n, res.APIJobs, mib(res.APIBytes))
	if f.pprof {
		e.profileSeconds = f.pprofSeconds
		saveProfiles(ctx, e, f.dir, fmt.Sprintf("scale-%d", n))
	}
	return report{Scenario: "scale", Data: res, Rows: res.rows()}, nil
}

// restartToFirstRun kills every replica and starts them again, the usual
// start with cursors in etcd, and gives the milliseconds to the first run.
func restartToFirstRun(ctx context.Context, e *env) (float64, error) {
	for _, r := range e.c.Replicas {
		if err := r.Kill(); err != nil {
			return 0, err
		}
	}
	t1 := time.Now()
	for _, r := range e.c.Replicas {
		if err := r.Start(); err != nil {
			return 0, err
		}
	}
	first, err := firstRunAfter(ctx, e.w, t1, 3*time.Minute)
	if err != nil {
		return 0, err
	}
	return ms(first.Sub(t1)), nil
}

func waitReplicasReady(ctx context.Context, e *env) error {
	for _, r := range e.c.Replicas {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := r.WaitReady(rctx)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

func saveHeapProfiles(ctx context.Context, e *env, dir string, n int) {
	for _, r := range e.c.Replicas {
		if err := fetch(ctx, r.URL()+"/debug/pprof/heap?debug=1", filepath.Join(dir, "profiles", fmt.Sprintf("scale-%d-%s-heap.txt", n, r.ID))); err != nil {
			logf("pprof: %v", err)
		}
	}
}

// measureFootprint reads the replicas' memory and their CPU share over
// window, the leader apart from the larger follower, and the largest etcd
// member's memory.
func (res *scaleResult) measureFootprint(ctx context.Context, e *env, leader *cluster.Replica, window time.Duration) error {
	var pids []int
	for _, r := range e.c.Replicas {
		pids = append(pids, r.Pid())
	}
	shares, err := cpuShare(ctx, pids, window)
	if err != nil {
		return err
	}
	res.CPUWindow = window.Seconds()
	for i, r := range e.c.Replicas {
		ps, err := readProc(pids[i])
		if err != nil {
			return err
		}
		if r == leader {
			res.LeaderRSS, res.LeaderPeak, res.LeaderCPU = ps.RSSBytes, ps.HWMBytes, shares[i]
		} else {
			res.FollowerRSS, res.FollowerCPU = max(res.FollowerRSS, ps.RSSBytes), max(res.FollowerCPU, shares[i])
		}
	}
	for _, m := range e.c.Members {
		if ps, err := readProc(m.Pid()); err == nil {
			res.EtcdRSS = max(res.EtcdRSS, ps.RSSBytes)
		}
	}
	return nil
}

// measureAPI times five GET /api/v1/jobs and five GET /healthz on the
// leader.
func (res *scaleResult) measureAPI(ctx context.Context, leader *cluster.Replica) error {
	var jobsLat, healthLat []time.Duration
	for range 5 {
		d, size, err := timedGet(ctx, leader.URL()+"/api/v1/jobs")
		if err != nil {
			return err
		}
		jobsLat, res.APIBytes = append(jobsLat, d), size
		if d, _, err = timedGet(ctx, leader.URL()+"/healthz"); err != nil {
			return err
		}
		healthLat = append(healthLat, d)
	}
	res.APIJobs, res.APIHealthz = distOf(jobsLat), distOf(healthLat)
	return nil
}

func (res *scaleResult) rows() []row {
	name := fmt.Sprintf("%dk jobs", res.Jobs/1000)
	return []row{
		{Scenario: "scale", Figure: name + ": leader RSS", Value: mib(res.LeaderRSS),
			Reference: fmt.Sprintf("peak %s; follower %s, etcd member %s", mib(res.LeaderPeak), mib(res.FollowerRSS), mib(res.EtcdRSS))},
		{Scenario: "scale", Figure: fmt.Sprintf("%s: leader CPU, steady (%d runs/s)", name, res.EverySecond), Value: pct(res.LeaderCPU) + " of a core",
			Reference: "follower " + pct(res.FollowerCPU)},
		{Scenario: "scale", Figure: name + ": start to first run (cold; restart)", Value: fmt.Sprintf("%.0f ms; %.0f ms", res.ColdStartMs, res.RestartMs),
			Reference: "cold includes starting etcd and writing every cursor"},
		{Scenario: "scale", Figure: name + ": GET /api/v1/jobs", Value: fmt.Sprintf("%s, %s", res.APIJobs, mib(res.APIBytes)),
			Reference: "GET /healthz " + res.APIHealthz.String()},
	}
}

func firstRunAfter(ctx context.Context, w *cluster.Witness, t time.Time, limit time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	r, err := w.WaitRun(ctx, func(r *cluster.Run) bool { return r.Start.After(t) })
	if err != nil {
		return time.Time{}, err
	}
	return r.Start, nil
}

var longClient = &http.Client{Timeout: 2 * time.Minute}

func timedGet(ctx context.Context, url string) (time.Duration, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	resp, err := longClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("bench: GET %s: %d", url, resp.StatusCode)
	}
	return time.Since(start), n, nil
}
