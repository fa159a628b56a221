package jobs_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A job removed from the config keeps its history readable (its runs
// listed, each run found) and is listed as removed with the time the
// leader found it so; put back, it is a configured job again with the
// same history. A name that never had a job is still unknown.
func TestRemovedJobHistoryStaysReadable(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	old := httpJob("old", "0 0 1 1 *", w.url(""))
	stay := httpJob("stay", "0 0 1 1 *", w.url(""))
	n := etcd.leading("a", newConfig(old, stay))
	ctx := t.Context()
	var ids []string
	for range 2 {
		id := n.trigger(t, "old", "")
		ids = append(ids, id)
		awaitRecord(t, n.client, "old", id, nil)
	}

	n.setConfig(newConfig(stay))
	var removed []jobs.RemovedJob
	poll.Until(t, 30*time.Second, "old listed as removed", func() (bool, string) {
		var err error
		removed, err = n.engine.RemovedJobs(ctx)
		return err == nil && len(removed) == 1, "removed " + jobsString(removed, err)
	})
	if removed[0].Name != "old" || removed[0].RemovedAt.IsZero() {
		t.Errorf("removed %+v, want old with its removal time", removed[0])
	}
	list, _, err := n.engine.Runs(ctx, "old", jobs.Page{Limit: 10})
	if err != nil || len(list) != 2 {
		t.Fatalf("runs of the removed job: %d, %v; want its 2 records", len(list), err)
	}
	for _, id := range ids {
		if st, err := n.engine.FindRun(ctx, id); err != nil || st.State != "finished" {
			t.Errorf("run %s of the removed job: %+v, %v; want it finished", id, st, err)
		}
	}
	if _, _, err := n.engine.Runs(ctx, "never", jobs.Page{Limit: 10}); !errors.Is(err, jobs.ErrUnknownJob) {
		t.Errorf("runs of a job that never was: %v, want ErrUnknownJob", err)
	}
	// Asked for as a job, the removed one points to its history, and a
	// slip of the keyboard to the job meant (issue 34, item 4).
	for _, tc := range []struct{ name, want string }{
		{"old", `job "old" was removed from the config at ` + removed[0].RemovedAt.UTC().Format(time.RFC3339) +
			`; its history stays readable for a while: scheduler runs old, and scheduler jobs --removed lists the removed jobs`},
		{"sty", `no job "sty": did you mean "stay"? (scheduler jobs lists the jobs)`},
		{"never", `no job "never" in the config: scheduler jobs lists the jobs, scheduler jobs --removed the removed ones`},
	} {
		_, err := n.engine.Job(ctx, tc.name)
		var m interface{ UserMessage() string }
		if !errors.Is(err, jobs.ErrUnknownJob) || !errors.As(err, &m) || m.UserMessage() != tc.want {
			t.Errorf("job %q: %v, want ErrUnknownJob saying %q", tc.name, err, tc.want)
		}
	}

	n.setConfig(newConfig(old, stay))
	poll.Until(t, 30*time.Second, "old's removal marker gone", func() (bool, string) {
		resp, err := n.client.Get(ctx, keys.New(testPrefix).RemovedJob("old"), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0, fmt.Sprint(resp, err)
	})
	if got := len(records(t, n.client, "old")); got != 2 {
		t.Errorf("put back: %d records of old, want 2", got)
	}
}

func jobsString(list []jobs.RemovedJob, err error) string {
	if err != nil {
		return err.Error()
	}
	s := "["
	for _, r := range list {
		s += r.Name + " "
	}
	return s + "]"
}
