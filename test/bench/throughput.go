package main

import (
	"context"
	"fmt"
	"time"
)

type throughputResult struct {
	Limit limitResult  `json:"limit"`
	Steps []loadResult `json:"steps"`
	// Best is the step with the most completed runs per second.
	BestRunsPerSec float64 `json:"best_runs_per_s"`
	WritesPerRun   float64 `json:"writes_per_run"`
	// Ceiling is limit txn/s divided by the measured writes per run: the
	// runs/s this design could reach if etcd were the only bound.
	Ceiling       float64 `json:"ceiling_runs_per_s"`
	LimitFraction float64 `json:"limit_fraction"`
	// EtcdCoresAtLimit is the members' CPU during the limit; the best
	// step's etcd cores beside it say how much of the machine the replicas
	// and the bench took from etcd.
	EtcdCoresAtLimit float64 `json:"etcd_cores_at_limit"`
	// PerCoreFraction is LimitFraction with etcd's CPU evened out: the
	// best step's etcd writes per etcd core-second over the limit's.
	PerCoreFraction float64 `json:"per_core_fraction"`
}

// throughput runs a load step per job count; targets return at once.
func throughput(ctx context.Context, e *env, limit limitResult, counts []int, window time.Duration) (report, error) {
	res := throughputResult{Limit: limit, EtcdCoresAtLimit: limit.EtcdCPUPerTxn * limit.TxnPerSec / 1000}
	var best loadResult
	for _, n := range counts {
		logf("throughput: %d jobs @every 1s for %s", n, window)
		step, err := runLoad(ctx, e, n, time.Second, 4*time.Second, window, 0)
		if err != nil {
			return report{}, err
		}
		logf("throughput: %d jobs: %.0f runs/s, %.2f writes/run, outcomes %v, cpu cores %v, lateness %s", n, step.RunsPerSec, step.WritesPerRn, step.Outcomes, step.CPU, step.Lateness)
		res.Steps = append(res.Steps, step)
		if step.RunsPerSec > best.RunsPerSec {
			best = step
		}
	}
	res.BestRunsPerSec, res.WritesPerRun = best.RunsPerSec, best.WritesPerRn
	if res.WritesPerRun > 0 {
		res.Ceiling = limit.TxnPerSec / res.WritesPerRun
		res.LimitFraction = res.BestRunsPerSec / res.Ceiling
		if cores := best.CPU["etcd"]; cores > 0 && res.EtcdCoresAtLimit > 0 {
			res.PerCoreFraction = res.LimitFraction * res.EtcdCoresAtLimit / cores
		}
	}
	var rows []row
	for _, s := range res.Steps {
		rows = append(rows, row{Scenario: "throughput", Figure: fmt.Sprintf("%d jobs @every 1s: completed runs/s", s.Jobs),
			Value:     fmt.Sprintf("%.0f runs/s (offered %d/s)", s.RunsPerSec, s.Jobs),
			Reference: fmt.Sprintf("limit %.0f txn/s / %.2f writes = %.0f runs/s", limit.TxnPerSec, s.WritesPerRn, limit.TxnPerSec/max(s.WritesPerRn, 1e-9)),
		}, row{Scenario: "throughput", Figure: fmt.Sprintf("%d jobs: etcd writes per run (counted)", s.Jobs),
			Value: fmt.Sprintf("%.3f", s.WritesPerRn),
			Reference: fmt.Sprintf("%d revisions / %.0f runs; etcd CPU %.3f ms per run (raw txn %.3f ms); cores: etcd %.2f, replicas %.2f, bench %.2f, %s",
				s.Revisions, s.Completed, s.EtcdCPUPerRun, limit.EtcdCPUPerTxn, s.CPU["etcd"], s.CPU["replicas"], s.CPU["bench"], hostNote(s.CPU))})
	}
	rows = append(rows, row{Scenario: "throughput", Figure: "best runs/s as a share of the etcd limit",
		Value:     pct(res.LimitFraction),
		Reference: fmt.Sprintf("%.0f of %.0f runs/s", res.BestRunsPerSec, res.Ceiling)})
	rows = append(rows, row{Scenario: "throughput", Figure: "the same, per etcd core (etcd writes per etcd CPU-second, best step over the limit)",
		Value: pct(res.PerCoreFraction),
		Reference: fmt.Sprintf("etcd had %.2f cores in the limit, %.2f in the best step (replicas %.2f, bench %.2f); a write cost etcd %.3f ms, a raw txn %.3f ms",
			res.EtcdCoresAtLimit, best.CPU["etcd"], best.CPU["replicas"], best.CPU["bench"], best.EtcdCPUPerRun/max(best.WritesPerRn, 1e-9), limit.EtcdCPUPerTxn)})
	return report{Scenario: "throughput", Data: res, Rows: rows}, nil
}

type latenessResult struct {
	Steps []loadResult `json:"steps"`
}

// latenessScenario measures start lateness at each rate, beside a bare
// timer and HTTP client at the same moment.
func latenessScenario(ctx context.Context, e *env, rates []int, window time.Duration) (report, error) {
	var res latenessResult
	var rows []row
	for _, r := range rates {
		logf("lateness: %d runs/s for %s", r, window)
		step, err := runLoad(ctx, e, r, time.Second, 4*time.Second, window, min(r, 100))
		if err != nil {
			return report{}, err
		}
		logf("lateness: %d runs/s: %s (reference %s)", r, step.Lateness, step.Reference)
		res.Steps = append(res.Steps, step)
		x := row{Scenario: "lateness", Figure: fmt.Sprintf("start lateness at %d runs/s", r),
			Value:     step.Lateness.String(),
			Reference: "bare timer+HTTP: " + step.Reference.String() + "; " + hostNote(step.CPU)}
		rows = append(rows, x)
	}
	return report{Scenario: "lateness", Data: res, Rows: rows}, nil
}
