package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcdsched/scheduler/internal/runs"
)

// refWorkerCommand is the hidden first argument that makes the bench binary
// one process of the burst scenario's reference (startReference re-executes
// itself with it).
const refWorkerCommand = "burst-reference-worker"

// refWorkerOptions are one reference process's part of the jobs.
type refWorkerOptions struct {
	endpoints []string
	prefix    string // of the job keys in etcd
	witness   string // URL
	name      string // job name prefix
	from, to  int    // job indices [from, to)
	// cpuProfile, when set, receives the process's CPU profile (-pprof).
	cpuProfile string
}

func parseRefWorker(args []string) (refWorkerOptions, error) {
	var o refWorkerOptions
	var endpoints string
	fs := flag.NewFlagSet(refWorkerCommand, flag.ContinueOnError)
	fs.StringVar(&endpoints, "endpoints", "", "etcd client URLs, comma-separated")
	fs.StringVar(&o.prefix, "prefix", "", "key prefix of the job keys")
	fs.StringVar(&o.witness, "witness", "", "the witness URL")
	fs.StringVar(&o.name, "name", "", "job name prefix")
	fs.IntVar(&o.from, "from", 0, "first job index")
	fs.IntVar(&o.to, "to", 0, "job index past the last")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.endpoints = strings.Split(endpoints, ",")
	if endpoints == "" || o.prefix == "" || o.witness == "" || o.name == "" || o.from < 0 || o.to <= o.from {
		return o, fmt.Errorf("%s: -endpoints, -prefix, -witness, -name and 0 <= -from < -to are required (got %q)", refWorkerCommand, args)
	}
	return o, nil
}

// refWorker is one process of the reference: what a lean etcd scheduler
// does per trigger, as Dapr's scheduler does (go-etcd-cron: one queue of
// timers per process, refQueue; on each trigger the callback over a shared
// keep-alive client, then one conditional put of the job's counter, at
// least once). Nothing else: no leader, no record, no watch.
func refWorker(args []string) error {
	o, err := parseRefWorker(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cli, err := clientv3.New(clientv3.Config{Endpoints: o.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("%s: etcd client: %w", refWorkerCommand, err)
	}
	defer cli.Close()
	jobs, err := createRefJobs(ctx, cli, o)
	if err != nil {
		return err
	}
	hc := newRefClient(len(jobs))
	defer hc.CloseIdleConnections()
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return fmt.Errorf("%s: %w", refWorkerCommand, err)
	}
	defer stopProfile()
	fmt.Println("ready")
	first := time.Now().Truncate(time.Second).Add(time.Second)
	newRefQueue(jobs, first, time.Second).run(ctx, func(j *refJob, tick time.Time) {
		j.call(ctx, hc, o.witness, tick)
		if err := j.count(ctx, cli); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "%s: job %s tick %s: %v\n", refWorkerCommand, j.name, tick.Format(time.TimeOnly), err)
		}
	})
	return nil
}

// newRefClient is the process's one HTTP client, keeping a keep-alive
// connection for each call that can be in flight (a job has at most one):
// with fewer, every burst of triggers dials afresh (a quarter of the
// process's CPU at 1,000 jobs with 64).
func newRefClient(jobs int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = jobs, jobs
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// startCPUProfile profiles the process into path until the returned
// function is called; nothing when path is empty.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// refJob is one job of the reference: its counter key and the revision
// its last put left, which the next put compares.
type refJob struct {
	name, key string
	rev       int64
	counter   int64
	next      time.Time // its next tick (refQueue's)
}

// createRefJobs writes each job's counter, up to 100 keys a transaction.
func createRefJobs(ctx context.Context, cli *clientv3.Client, o refWorkerOptions) ([]*refJob, error) {
	var jobs []*refJob
	for lo := o.from; lo < o.to; lo += 100 {
		var ops []clientv3.Op
		var batch []*refJob
		for i := lo; i < min(lo+100, o.to); i++ {
			j := &refJob{name: burstJobName(o.name, i), key: fmt.Sprintf("%sjobs/%05d", o.prefix, i)}
			batch = append(batch, j)
			ops = append(ops, clientv3.OpPut(j.key, "0"))
		}
		resp, err := cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, fmt.Errorf("%s: creating jobs %d-%d: %w", refWorkerCommand, lo, lo+len(ops)-1, err)
		}
		for _, j := range batch {
			j.rev = resp.Header.Revision
		}
		jobs = append(jobs, batch...)
	}
	return jobs, nil
}

func (j *refJob) call(ctx context.Context, hc *http.Client, witness string, tick time.Time) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, witness, nil)
	if err != nil {
		return
	}
	req.Header.Set("X-Scheduler-Job", j.name)
	req.Header.Set("X-Scheduler-Run-Id", runs.ID(j.name, tick))
	req.Header.Set("X-Scheduler-Attempt", "1")
	req.Header.Set("X-Scheduler-Scheduled-At", tick.UTC().Format(runs.TimeFormat))
	if resp, err := hc.Do(req); err == nil {
		// Read to its end: a body closed unread closes its connection,
		// and the next call dials anew (a third of the process's CPU).
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// count is the peer's one write per trigger: the counter, if the job key is
// as this process last wrote it; if not, it reads the key again (the peer
// then re-reads its job).
func (j *refJob) count(ctx context.Context, cli *clientv3.Client) error {
	next := j.counter + 1
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(j.key), "=", j.rev)).
		Then(clientv3.OpPut(j.key, strconv.FormatInt(next, 10))).Else(clientv3.OpGet(j.key)).Commit()
	if err != nil {
		return err
	}
	if resp.Succeeded {
		j.counter, j.rev = next, resp.Header.Revision
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return errors.New("job key gone")
	}
	j.rev = kvs[0].ModRevision
	j.counter, _ = strconv.ParseInt(string(kvs[0].Value), 10, 64)
	return fmt.Errorf("job key changed (now revision %d); re-read", j.rev)
}
