package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// mainCluster runs limit and throughput on one cluster (the limit is
// measured on the very cluster the runs then use), then lateness and
// failover on a fresh one.
func mainCluster(ctx context.Context, f flags, bins cluster.Binaries, want map[string]bool, emit func(report)) error {
	logf("starting 3 etcd members and 3 replicas")
	e, err := startMainEnv(ctx, f, bins, "main")
	if err != nil {
		return err
	}
	defer func() {
		if e != nil {
			e.close()
		}
	}()
	if err := limitScenarios(ctx, e, f, want, emit); err != nil {
		return err
	}
	if want["throughput"] && (want["lateness"] || want["failover"]) {
		// Lateness measured right after the throughput steps came out
		// seconds late: it measured what the overloaded steps left
		// behind (their records, which forget now deletes, and the store
		// they grew). It gets a cluster of its own, as each scale size
		// does.
		e.close()
		e = nil
		logf("starting a fresh cluster for lateness and failover")
		if e, err = startMainEnv(ctx, f, bins, "fresh"); err != nil {
			return err
		}
	}
	return freshScenarios(ctx, e, f, want, emit)
}

// startMainEnv starts a cluster with no jobs under f.dir/name.
func startMainEnv(ctx context.Context, f flags, bins cluster.Binaries, name string) (*env, error) {
	e, err := startEnv(ctx, bins, filepath.Join(f.dir, name), settings{SessionTTL: 5 * time.Second, MaxParallel: 256, Fsync: f.mainFsync},
		func(string) []jobSpec { return nil })
	if err == nil && f.pprof {
		e.profileDir, e.profileSeconds = f.dir, f.pprofSeconds
	}
	return e, err
}

// limitScenarios measures the limit, then the scenarios read against it
// (floor, leanfloor, throughput), all on e.
func limitScenarios(ctx context.Context, e *env, f flags, want map[string]bool, emit func(report)) error {
	var limit limitResult
	if want["limit"] || want["floor"] || want["throughput"] {
		logf("limit: %d clients x %d in flight for %s", len(e.c.Replicas), f.limitConc, f.duration)
		var err error
		if limit, err = measureLimit(ctx, e, f.limitConc, f.duration); err != nil {
			return fmt.Errorf("limit: %w", err)
		}
		logf("limit: %.0f txn/s, %s", limit.TxnPerSec, limit.Latency)
		emit(report{Scenario: "limit", Data: limit, Rows: limit.rows()})
	}
	if want["floor"] {
		r, err := floor(ctx, e, limit, f.duration)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		emit(report{Scenario: "floor", Data: r, Rows: r.rows()})
	}
	if want["leanfloor"] {
		r, err := leanFloor(ctx, e, f.leanRuns, f.leanHistory, leanShapes(f.leanSlots, f.leanWatch), f.duration)
		if err != nil {
			return fmt.Errorf("leanfloor: %w", err)
		}
		emit(report{Scenario: "leanfloor", Data: r, Rows: r.rows()})
	}
	if want["throughput"] {
		r, err := throughput(ctx, e, limit, f.jobs, f.duration)
		if err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
		emit(r)
	}
	return nil
}

// freshScenarios runs lateness and failover on e, a cluster the
// throughput steps did not overload.
func freshScenarios(ctx context.Context, e *env, f flags, want map[string]bool, emit func(report)) error {
	if want["lateness"] {
		r, err := latenessScenario(ctx, e, f.rates, f.duration)
		if err != nil {
			return fmt.Errorf("lateness: %w", err)
		}
		emit(r)
	}
	if want["failover"] {
		r, err := failover(ctx, e)
		if err != nil {
			return fmt.Errorf("failover: %w", err)
		}
		emit(r)
	}
	return nil
}
