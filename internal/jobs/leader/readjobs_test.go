package leader

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
)

// readJobs sends inFlight transactions at once (a read waits its
// turn behind the runs' commits: one at a time, a round of 4,000 jobs read
// for 72 s) and still hands each job its own two ranges, in the jobs'
// order. Each read's batch is built in the goroutine that sends it, so the
// first inFlight batches meet at a barrier: sent one at a time, the
// first would wait there alone.
func TestReadJobsSendsItsReadsAtOnceAndAnswersInOrder(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	l := newTestLeader(t, cli, "/read/", jobstest.Config(), clockwork.NewRealClock())
	per := pruneReadBatch / 2
	var jobs []string
	for i := range per*inFlight*2 + 3 { // two waves and a part
		job := fmt.Sprintf("j%03d", i)
		jobs = append(jobs, job)
		if _, err := cli.Put(t.Context(), "/read/a/"+job, job+"-a"); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu       sync.Mutex
		waiting  int
		met      = make(chan struct{})
		deadline = time.Now().Add(10 * time.Second)
	)
	reads := func(job string) [2]clientv3.Op {
		if i := slices.Index(jobs, job); i < per*inFlight && i%per == 0 { // a first-wave batch's first job
			mu.Lock()
			if waiting++; waiting == inFlight {
				close(met)
			}
			mu.Unlock()
			select {
			case <-met:
			case <-time.After(time.Until(deadline)):
				t.Errorf("the batch of %s was built alone: the first wave's reads are not sent at once", job)
			}
		}
		return [2]clientv3.Op{clientv3.OpGet("/read/a/" + job), clientv3.OpGet("/read/b/" + job)}
	}
	var got []string
	err := l.base.readJobs(t.Context(), jobs, "test ranges", reads, func(job string, first, second []*mvccpb.KeyValue) error {
		if len(first) != 1 || string(first[0].Value) != job+"-a" || len(second) != 0 {
			t.Errorf("%s read %v and %v", job, first, second)
		}
		got = append(got, job)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, jobs) {
		t.Errorf("jobs answered in the order %v, want %v", got, jobs)
	}
}

// A round of more jobs than a transaction of each kind holds sends its
// reads, stretches, deletes and take-outs a few at once (eachBatchInFlight),
// and leaves each job what a round of it alone leaves: its newest records
// within its limits, the rest covered in its stretches, its tick taken out
// of its chunk record. Under -race this also checks the stretches' writes
// share the term's map safely.
func TestARoundOfManyJobsPrunesEachAsAlone(t *testing.T) {
	const n = 130 // two waves of reads, three batches of stretches, four of deletes, two of take-outs
	var jobs []config.Job
	var names []string
	for i := range n {
		j := jobstest.Job(fmt.Sprintf("m%03d", i), "@every 1s")
		j.HistoryLimit, j.SkippedHistoryLimit = 2, 1
		jobs, names = append(jobs, j), append(names, j.Name)
	}
	l, cli, _ := leaderOn(t, "/many/", jobstest.Config(jobs...), coverT0)
	var chunks []string
	for i, job := range names {
		putTicks(t, cli, l, job, 1, 2, 3, 4)
		chunks = append(chunks, putChunk(t, cli, l, 10, i, job))
		putSkipped(t, cli, l, job, 11)
	}
	indexChunks(t, cli, l)
	if err := l.pruner.pruneJobs(t.Context(), names); err != nil {
		t.Fatal(err)
	}
	for i, job := range names {
		want := []string{runs.ID(job, tickAt(3)), runs.ID(job, tickAt(4)), runs.ID(job, tickAt(11))}
		if got := recordIDs(t, l, job); !slices.Equal(got, want) {
			t.Errorf("%s's records %v, want %v", job, got, want)
		}
		if st, _ := stretchesIn(t, cli, l, job); !st.Covers(tickAt(1)) || !st.Covers(tickAt(2)) || !st.Covers(tickAt(10)) {
			t.Errorf("%s's stretches %v, want ticks 1, 2 and 10 covered", job, st)
		}
		if got := chunkJobs(t, cli, chunks[i]); got != nil {
			t.Errorf("%s's chunk record names %v, want it deleted", job, got)
		}
	}
}
