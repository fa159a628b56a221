package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// coresStep is the limit and one throughput step with the etcd members
// pinned to the first Cores of the CPUs this process may use.
type coresStep struct {
	Cores   int    `json:"cores"`
	CPUList string `json:"cpu_list"` // taskset -c
	// MembersAffinity is each member's Cpus_allowed_list read back from
	// /proc after pinning.
	MembersAffinity  []string    `json:"members_affinity"`
	Limit            limitResult `json:"limit"`
	EtcdCoresAtLimit float64     `json:"etcd_cores_at_limit"`
	Step             loadResult  `json:"step"`
	RunsPerTxn       float64     `json:"runs_per_raw_txn"`
}

type coresResult struct {
	Taskset     string      `json:"taskset"` // its path; empty when absent
	Skipped     string      `json:"skipped,omitempty"`
	CPUsAllowed string      `json:"cpus_allowed"`
	Jobs        int         `json:"jobs"`
	Steps       []coresStep `json:"steps"`
}

// cores measures how the raw transaction rate and the completed runs grow
// with the cores etcd may use: on a cluster of its own, the three members
// are pinned (taskset -a: every thread) to 1 core, then to 2, and at each
// the limit and one throughput step run. Only etcd is pinned; the replicas
// and the bench keep every core, so with etcd on one core they still
// share that core with it.
func cores(ctx context.Context, f flags, bins cluster.Binaries) (report, error) {
	res := coresResult{Jobs: f.coresJobs, CPUsAllowed: cpusAllowed()}
	path, err := exec.LookPath("taskset")
	if err != nil {
		res.Skipped = "taskset not found in PATH (util-linux): etcd cannot be pinned, nothing measured"
		logf("cores: %s", res.Skipped)
		return report{Scenario: "cores", Data: res, Rows: []row{{Scenario: "cores", Figure: "etcd pinned to 1 and 2 cores", Value: "not measured", Reference: res.Skipped}}}, nil
	}
	res.Taskset = path
	allowed := parseCPUList(res.CPUsAllowed)
	counts := fittingCoreCounts(f.cores, allowed, res.CPUsAllowed)
	if len(counts) == 0 {
		res.Skipped = fmt.Sprintf("no core count of -cores fits the %d CPUs allowed (%s)", len(allowed), res.CPUsAllowed)
		return report{Scenario: "cores", Data: res, Rows: []row{{Scenario: "cores", Figure: "etcd pinned", Value: "not measured", Reference: res.Skipped}}}, nil
	}

	logf("cores: starting a cluster of its own")
	e, err := startEnv(ctx, bins, filepath.Join(f.dir, "cores"), settings{SessionTTL: 5 * time.Second, MaxParallel: 256},
		func(string) []jobSpec { return nil })
	if err != nil {
		return report{}, err
	}
	defer e.close()
	var rows []row
	for _, k := range counts {
		st := coresStep{Cores: k, CPUList: joinInts(allowed[:k])}
		if err := measureCoresStep(ctx, e, f, path, &st); err != nil {
			return report{}, err
		}
		res.Steps = append(res.Steps, st)
		rows = append(rows, st.rows(f.coresJobs)...)
	}
	rows = append(rows, coresMeanRows(res.Steps)...)
	return report{Scenario: "cores", Data: res, Rows: rows}, nil
}

// fittingCoreCounts keeps the core counts of -cores that the CPUs this
// process may use can hold.
func fittingCoreCounts(asked, allowed []int, allowedList string) []int {
	var counts []int
	for _, k := range asked {
		if k > len(allowed) {
			logf("cores: %d cores asked, %d allowed (%s): skipped", k, len(allowed), allowedList)
			continue
		}
		counts = append(counts, k)
	}
	return counts
}

// name is how the step's figures and log lines call it.
func (st *coresStep) name() string {
	return fmt.Sprintf("etcd on %d core%s (taskset -c %s)", st.Cores, plural(st.Cores), st.CPUList)
}

// measureCoresStep pins the members to st.CPUList, then measures the
// limit and one throughput step into st.
func measureCoresStep(ctx context.Context, e *env, f flags, taskset string, st *coresStep) error {
	if err := pinMembers(ctx, e, taskset, st); err != nil {
		return err
	}
	name, k := st.name(), st.Cores
	logf("cores: %s: members' affinity now %v", name, st.MembersAffinity)
	time.Sleep(time.Second)
	logf("cores: %s: limit for %s", name, f.duration)
	var err error
	if st.Limit, err = measureLimit(ctx, e, f.limitConc, f.duration); err != nil {
		return fmt.Errorf("cores %d: limit: %w", k, err)
	}
	st.EtcdCoresAtLimit = st.Limit.EtcdCPUPerTxn * st.Limit.TxnPerSec / 1000
	logf("cores: %s: limit %.0f txn/s, etcd %.2f cores", name, st.Limit.TxnPerSec, st.EtcdCoresAtLimit)
	logf("cores: %s: %d jobs @every 1s for %s", name, f.coresJobs, f.duration)
	if st.Step, err = runLoad(ctx, e, f.coresJobs, time.Second, 4*time.Second, f.duration, 0); err != nil {
		return fmt.Errorf("cores %d: step: %w", k, err)
	}
	if st.Limit.TxnPerSec > 0 {
		st.RunsPerTxn = st.Step.RunsPerSec / st.Limit.TxnPerSec
	}
	s := st.Step
	logf("cores: %s: %.0f runs/s, outcomes %v, cpu cores %v", name, s.RunsPerSec, s.Outcomes, s.CPU)
	return nil
}

// pinMembers pins every thread of each etcd member to st.CPUList and
// records the affinity /proc reports back.
func pinMembers(ctx context.Context, e *env, taskset string, st *coresStep) error {
	for _, m := range e.c.Members {
		pid := m.Pid()
		if pid == 0 {
			return fmt.Errorf("cores: member %s not running", m.Name)
		}
		if out, err := exec.CommandContext(ctx, taskset, "-a", "-p", "-c", st.CPUList, strconv.Itoa(pid)).CombinedOutput(); err != nil {
			return fmt.Errorf("cores: taskset -a -p -c %s %d: %w: %s", st.CPUList, pid, err, out)
		}
		st.MembersAffinity = append(st.MembersAffinity, affinityOf(pid))
	}
	return nil
}

// rows are the step's two figures: the raw limit and the throughput step.
func (st *coresStep) rows(jobs int) []row {
	name, s := st.name(), st.Step
	return []row{
		{Scenario: "cores", Figure: name + ": raw etcd txn/s",
			Value: fmt.Sprintf("%.0f txn/s", st.Limit.TxnPerSec),
			Reference: fmt.Sprintf("etcd used %.2f cores, %.3f ms of CPU per txn; %s; latency %s",
				st.EtcdCoresAtLimit, st.Limit.EtcdCPUPerTxn, hostNote(st.Limit.CPU), st.Limit.Latency)},
		{Scenario: "cores", Figure: fmt.Sprintf("%s: %d jobs @every 1s: completed runs/s", name, jobs),
			Value: fmt.Sprintf("%.0f runs/s (offered %d/s)", s.RunsPerSec, s.Jobs),
			Reference: fmt.Sprintf("%.3f runs per raw txn; %.2f writes/run; etcd CPU %.3f ms per run; cores: etcd %.2f, replicas %.2f, bench %.2f, %s; lateness %s",
				st.RunsPerTxn, s.WritesPerRn, s.EtcdCPUPerRun, s.CPU["etcd"], s.CPU["replicas"], s.CPU["bench"], hostNote(s.CPU), s.Lateness)},
	}
}

// coresMean is one core count's mean over its steps.
type coresMean struct {
	n, txn, runs, txnPerCore, runsPerCore float64
	busy                                  int // limits and steps with a busy host
}

// coresMeanRows gives each core count's mean over its steps (-cores
// 1,2,1,2 alternates them, so a drift of the shared host weighs on both),
// then the largest count over the smallest.
func coresMeanRows(steps []coresStep) []row {
	byCores, ks := coresMeans(steps)
	var rows []row
	for _, k := range ks {
		m := byCores[k]
		rows = append(rows, row{Scenario: "cores", Figure: fmt.Sprintf("etcd on %d core%s: mean of %.0f step%s", k, plural(k), m.n, plural(int(m.n))),
			Value:     fmt.Sprintf("%.0f txn/s; %.0f runs/s", m.txn, m.runs),
			Reference: fmt.Sprintf("per etcd CPU-second (3 members): %.0f raw txns, %.0f completed runs; %d of %.0f measurements on a busy host", m.txnPerCore, m.runsPerCore, m.busy, 2*m.n)})
	}
	if len(ks) >= 2 {
		lo, hi := ks[0], ks[len(ks)-1]
		a, b := byCores[lo], byCores[hi]
		if a.txn > 0 && a.runs > 0 {
			rows = append(rows, row{Scenario: "cores", Figure: fmt.Sprintf("etcd on %d cores over %d (means)", hi, lo),
				Value:     fmt.Sprintf("raw txn/s x%.2f; runs/s x%.2f", b.txn/a.txn, b.runs/a.runs),
				Reference: fmt.Sprintf("x%.2f would be linear; only etcd is pinned: the replicas and the bench use every core", float64(hi)/float64(lo))})
		}
	}
	return rows
}

// coresMeans averages the steps by core count; the counts come back sorted.
func coresMeans(steps []coresStep) (map[int]*coresMean, []int) {
	byCores := map[int]*coresMean{}
	var ks []int
	for _, st := range steps {
		m := byCores[st.Cores]
		if m == nil {
			m = &coresMean{}
			byCores[st.Cores] = m
			ks = append(ks, st.Cores)
		}
		m.n++
		m.txn += st.Limit.TxnPerSec
		m.runs += st.Step.RunsPerSec
		m.txnPerCore += perCoreSecond(st.Limit.EtcdCPUPerTxn)
		m.runsPerCore += perCoreSecond(st.Step.EtcdCPUPerRun)
		for _, cpu := range []map[string]float64{st.Limit.CPU, st.Step.CPU} {
			if cpu["other"] >= busyHost {
				m.busy++
			}
		}
	}
	slices.Sort(ks)
	for _, m := range byCores {
		m.txn, m.runs, m.txnPerCore, m.runsPerCore = m.txn/m.n, m.runs/m.n, m.txnPerCore/m.n, m.runsPerCore/m.n
	}
	return byCores, ks
}

// perCoreSecond turns milliseconds of CPU per operation into operations
// per CPU-second.
func perCoreSecond(msPer float64) float64 {
	if msPer <= 0 {
		return 0
	}
	return 1000 / msPer
}

// cpusAllowed is this process's Cpus_allowed_list ("0-1").
func cpusAllowed() string {
	return affinityOf(os.Getpid())
}

func affinityOf(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// parseCPUList reads a kernel CPU list ("0-3,8,10-11").
func parseCPUList(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
