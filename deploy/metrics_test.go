package deploy

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// replicaConfig runs jobs that make every label value the queries select on
// appear: runs that succeed and fail (runs_total{outcome}), a slow job whose
// ticks overlap (runs_skipped_total{reason="overlap"}, slots_in_use{job}),
// and one whose queued ticks wait past their starting deadline for the slot
// (runs_skipped_total{reason="deadline"}, runs_total{outcome="missed"}),
// a job that fails and is overdue (job_overdue, last_success_timestamp
// through the jobs that succeed) and a sink nobody listens on, whose notifications of failed runs are
// dropped after max_age (notifications_total{result="dropped"}).
const replicaConfig = `
cluster:
  data_dir: %s
  session_ttl: 2s
worker:
  shutdown_grace: 1s
notify:
  sinks:
    - name: nowhere
      url: http://127.0.0.1:1/hook
      on: [failed]
  default: [nowhere]
  max_age: 1s
jobs:
  - name: succeeds
    schedule: "@every 1s"
    exec: {command: ["true"]}
  - name: fails
    schedule: "@every 1s"
    overdue_after: 1s
    exec: {command: ["false"]}
  - name: slow
    schedule: "@every 1s"
    overlap: skip
    exec: {command: ["sleep", "3"]}
  - name: queued
    schedule: "@every 1s"
    overlap: queue
    queue_limit: 1
    starting_deadline: 1s
    exec: {command: ["sleep", "3"]}
`

// eventOnly are series the queries select that only a failure produces,
// and why the test does not cause it. Their metric and label names are
// still checked; only the value's presence is not.
var eventOnly = map[string]string{
	`scheduler_runs_total{outcome="lost"}`: "needs a replica to die holding a slot and its lease to expire",
}

// replica is a real scheduler process with an embedded etcd.
type replica struct {
	pid  int
	addr string
	done chan error // the process's exit, once
}

// startReplica builds cmd/scheduler from the main module and runs it in
// its own process group, which the test kills at its end with the exec
// jobs it started.
func startReplica(t *testing.T) replica {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "scheduler")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/etcdsched/scheduler/cmd/scheduler")
	build.Dir = ".." // the main module, whose go.mod resolves the package
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, replicaConfig, filepath.Join(dir, "data")), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "replica.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "run", "--config", cfg, "--id", "t1", "--listen", addr, "--log-format", "text")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start replica: %v", err)
	}
	r := replica{pid: cmd.Process.Pid, addr: addr, done: make(chan error, 1)}
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() {
		// SIGTERM first, so the embedded etcd closes its files; the group
		// gets SIGKILL if the replica outlives its shutdown grace.
		_ = syscall.Kill(-r.pid, syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			t.Errorf("replica still running 20s after SIGTERM; killed")
		}
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("replica log:\n%s", out)
		}
	})
	return r
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitFor polls cond until it returns nil, the replica exits, or the
// deadline passes; the last error says what was still missing.
func (r replica) waitFor(t *testing.T, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case exitErr := <-r.done:
			r.done <- exitErr // for Cleanup
			t.Fatalf("waiting for %s: replica exited: %v (last: %v)", what, exitErr, err)
		case <-deadline.C:
			t.Fatalf("waiting for %s: %v after %s", what, err, timeout)
		case <-tick.C:
		}
	}
}

func (r replica) get(path string) (*http.Response, error) {
	c := http.Client{Timeout: 5 * time.Second}
	return c.Get("http://" + r.addr + path)
}

// scrape reads /metrics with Prometheus' own text parser.
func (r replica) scrape() (map[string]*dto.MetricFamily, error) {
	resp, err := r.get("/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	return fams, nil
}

// family finds the family a selector's metric name belongs to: histograms
// and summaries are queried through their _bucket, _sum and _count series.
func family(fams map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, bool) {
	if f, ok := fams[name]; ok {
		return f, false
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		f, ok := fams[base]
		if !ok {
			continue
		}
		switch t := f.GetType(); {
		case t == dto.MetricType_HISTOGRAM, t == dto.MetricType_GAUGE_HISTOGRAM,
			t == dto.MetricType_SUMMARY && suffix != "_bucket":
			return f, suffix == "_bucket"
		}
	}
	return nil, false
}

// missing lists what the queries select that the scrape lacks: a metric,
// a label a matcher names, or a label value an equality matcher names.
func missing(fams map[string]*dto.MetricFamily, qs []query) error {
	var errs []error
	for _, q := range qs {
		for _, vs := range q.selectors() {
			name := metricName(vs)
			f, bucket := family(fams, name)
			if f == nil {
				errs = append(errs, fmt.Errorf("%s: %s is not exported", q.where, name))
				continue
			}
			seen := map[string]map[string]bool{}
			for _, m := range f.GetMetric() {
				for _, lp := range m.GetLabel() {
					if seen[lp.GetName()] == nil {
						seen[lp.GetName()] = map[string]bool{}
					}
					seen[lp.GetName()][lp.GetValue()] = true
				}
			}
			for _, m := range vs.LabelMatchers {
				switch {
				case m.Name == model.MetricNameLabel, m.Name == "le" && bucket:
				case seen[m.Name] == nil:
					errs = append(errs, fmt.Errorf("%s: %s has no label %q (has %q)", q.where, name, m.Name, slices.Sorted(maps.Keys(seen))))
				case m.Type == labels.MatchEqual && !seen[m.Name][m.Value] &&
					eventOnly[fmt.Sprintf("%s{%s=%q}", name, m.Name, m.Value)] == "":
					errs = append(errs, fmt.Errorf("%s: no series %s{%s=%q} yet", q.where, name, m.Name, m.Value))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// TestMonitoringMetricsExist runs a real replica and checks that every
// metric the alert rules and the Grafana board read is on its /metrics,
// with the labels their matchers name: a renamed metric or label fails
// here, not silently in a dashboard.
func TestMonitoringMetricsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the scheduler binary")
	}
	_, ruleQs := alertRules(t)
	_, boardQs := dashboardQueries(t)
	qs := append(ruleQs, boardQs...)

	r := startReplica(t)
	r.waitFor(t, "/readyz 200", time.Minute, func() error {
		resp, err := r.get("/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	// Run outcomes and skips need runs; wait for them to have happened.
	r.waitFor(t, "every queried metric", time.Minute, func() error {
		fams, err := r.scrape()
		if err != nil {
			return err
		}
		return missing(fams, qs)
	})

	// A reload moves config_reloads_total, which SchedulerConfigReloadFailed
	// and the board read: SIGHUP the replica (not its group: the exec jobs
	// would die of it) and see the success count rise.
	before := reloads(t, r, "success")
	if err := syscall.Kill(r.pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "a counted reload", 30*time.Second, func() error {
		if got := reloads(t, r, "success"); got <= before {
			return fmt.Errorf("scheduler_config_reloads_total{result=\"success\"} %v, was %v", got, before)
		}
		return nil
	})
}

func reloads(t *testing.T, r replica, result string) float64 {
	t.Helper()
	fams, err := r.scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fams["scheduler_config_reloads_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "result" && lp.GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no scheduler_config_reloads_total{result=%q}", result)
	return 0
}
