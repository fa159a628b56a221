package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// limitResult is the raw etcd transaction rate of the cluster: the most any
// design built on one transaction per step could do on this machine.
type limitResult struct {
	Clients     int     `json:"clients"`
	PerClient   int     `json:"in_flight_per_client"`
	ValueBytes  int     `json:"value_bytes"`
	Seconds     float64 `json:"seconds"`
	Txns        int64   `json:"txns"`
	TxnPerSec   float64 `json:"txn_per_s"`
	Revisions   int64   `json:"revisions"`
	Latency     dist    `json:"latency"`
	Errors      int64   `json:"errors"`
	ThroughProx bool    `json:"through_replica_proxies"`
	// EtcdCPUPerTxn: the members' CPU time over the window per
	// transaction, in milliseconds (all three members together).
	EtcdCPUPerTxn float64 `json:"etcd_cpu_ms_per_txn"`
	// CPU is each group's use over the window, in cores, as a load
	// step's (with "other" and "steal" for the rest of the host).
	CPU map[string]float64 `json:"cpu_cores"`
}

// proxyClients is one etcd client per replica, each through that
// replica's own proxies: the path the replica's traffic takes.
func (e *env) proxyClients() ([]*clientv3.Client, error) {
	var clis []*clientv3.Client
	for _, r := range e.c.Replicas {
		var eps []string
		for _, p := range r.Proxies {
			eps = append(eps, p.Endpoint())
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return clis, err
		}
		clis = append(clis, cli)
	}
	return clis, nil
}

func closeAll(clis []*clientv3.Client) {
	for _, c := range clis {
		_ = c.Close()
	}
}

// measureLimit runs put-if-absent transactions of a small queue-entry-sized
// value from one client per replica, each through that replica's own proxies
// (the path the replica's traffic takes), with conc in flight per client.
func measureLimit(ctx context.Context, e *env, conc int, d time.Duration) (limitResult, error) {
	res := limitResult{Clients: len(e.c.Replicas), PerClient: conc, ValueBytes: 512, ThroughProx: true}
	clis, err := e.proxyClients()
	defer closeAll(clis)
	if err != nil {
		return res, err
	}
	value := strings.Repeat("x", res.ValueBytes)
	rev0, err := e.revision(ctx)
	if err != nil {
		return res, err
	}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	pids := e.pids()
	mark0 := markCPU(pids)
	start := time.Now()
	txns, errs, lat := putIfAbsentLoad(runCtx, clis, conc, value)
	elapsed := time.Since(start)
	mark1 := markCPU(pids)
	res.CPU = mark0.cores(mark1, elapsed)
	rev1, err := e.revision(ctx)
	if err != nil {
		return res, err
	}
	// Clean up so later scenarios' revision counts see only their own writes.
	if _, err := e.cli.Delete(ctx, "/bench/limit/", clientv3.WithPrefix()); err != nil {
		return res, err
	}
	res.Seconds = elapsed.Seconds()
	res.Txns = txns
	res.Errors = errs
	res.TxnPerSec = float64(res.Txns) / res.Seconds
	res.Revisions = rev1 - rev0
	res.Latency = distOf(lat)
	var etcdTicks int64
	for _, pid := range pids["etcd"] {
		etcdTicks += mark1.proc[pid] - mark0.proc[pid]
	}
	if res.Txns > 0 {
		res.EtcdCPUPerTxn = float64(etcdTicks) * 1000 / clockTicks / float64(res.Txns)
	}
	return res, e.compact(ctx)
}

// putIfAbsentLoad keeps conc put-if-absent transactions of value in flight
// on each client until ctx ends, and gives the transactions committed, the
// errors before the end and every committed transaction's latency.
func putIfAbsentLoad(ctx context.Context, clis []*clientv3.Client, conc int, value string) (txns, errs int64, lat []time.Duration) {
	var committed, failed atomic.Int64
	perSlot := make([][]time.Duration, len(clis)*conc)
	var wg sync.WaitGroup
	for ci, cli := range clis {
		for g := range conc {
			slot := ci*conc + g
			wg.Add(1)
			go func() {
				defer wg.Done()
				perSlot[slot] = putIfAbsentSlot(ctx, cli, slot, value, &committed, &failed)
			}()
		}
	}
	wg.Wait()
	for _, l := range perSlot {
		lat = append(lat, l...)
	}
	return committed.Load(), failed.Load(), lat
}

// putIfAbsentSlot is one slot's transactions, one after another, each on a
// key of its own, until ctx ends.
func putIfAbsentSlot(ctx context.Context, cli *clientv3.Client, slot int, value string, txns, errs *atomic.Int64) []time.Duration {
	var lat []time.Duration
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("/bench/limit/%d/%d", slot, n)
		t := time.Now()
		_, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, value)).Commit()
		if err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
			}
			continue
		}
		txns.Add(1)
		lat = append(lat, time.Since(t))
	}
	return lat
}

func (r limitResult) rows() []row {
	return []row{
		{Scenario: "limit", Figure: "raw etcd txn/s (put-if-absent, 512 B)",
			Value:     fmt.Sprintf("%.0f txn/s", r.TxnPerSec),
			Reference: fmt.Sprintf("%d clients x %d in flight, through the replicas' proxies; %d revisions for %d txns", r.Clients, r.PerClient, r.Revisions, r.Txns)},
		{Scenario: "limit", Figure: "raw etcd txn latency", Value: r.Latency.String(), Reference: "(the reference for claim/release)"},
		{Scenario: "limit", Figure: "etcd CPU per raw txn (3 members)", Value: fmt.Sprintf("%.3f ms", r.EtcdCPUPerTxn),
			Reference: fmt.Sprintf("(the reference for etcd CPU per run); cores: etcd %.2f, replicas %.2f, bench (clients, proxies) %.2f, %s",
				r.CPU["etcd"], r.CPU["replicas"], r.CPU["bench"], hostNote(r.CPU))},
	}
}
