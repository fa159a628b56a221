package overdue

import (
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
)

// Last answers each job's later success of the two places it may be
// stored, for a few jobs (one read of their keys) and for many (one read
// of the directory), and while etcd does not answer, All's last answer
// with the error.
func TestLastAnswersTheLaterSuccessAndKeepsItsLastRead(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := etcdtest.NewClient(t, cluster.Endpoints())
	k := keys.New("/last/")
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	succeeded := func(job string, minute int) string {
		return Encode(Succeeded{RunID: fmt.Sprintf("%s-%d", job, minute), ScheduledAt: at.Add(time.Duration(minute) * time.Minute),
			EndedAt: at.Add(time.Duration(minute)*time.Minute + time.Second)})
	}
	ops := []clientv3.Op{
		clientv3.OpPut(k.LastSuccess("new"), succeeded("new", 5)),
		clientv3.OpPut(k.SucceededInJobs("old"), succeeded("old", 3)),
		clientv3.OpPut(k.LastSuccess("both"), succeeded("both", 7)),
		clientv3.OpPut(k.SucceededInJobs("both"), succeeded("both", 2)),
		clientv3.OpPut(k.LastSuccess("later-old"), succeeded("later-old", 1)),
		clientv3.OpPut(k.SucceededInJobs("later-old"), succeeded("later-old", 9)),
		clientv3.OpPut(k.LastSuccess("garbage"), "{"),
	}
	if _, err := cli.Txn(t.Context()).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
	view := NewView(k)
	resp, err := cli.Get(t.Context(), k.Jobs(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	view.Reset(resp.Kvs, resp.Header.Revision)
	last, err := NewLast(cli, k, view)
	if err != nil {
		t.Fatal(err)
	}
	want := "both=both-7 later-old=later-old-9 new=new-5 old=old-3"
	show := func(m map[string]*Succeeded) string {
		var out []string
		for _, job := range []string{"both", "garbage", "later-old", "missing", "new", "old"} {
			if s := m[job]; s != nil {
				out = append(out, job+"="+s.RunID)
			}
		}
		return strings.Join(out, " ")
	}
	few, err := last.Of(t.Context(), "both", "garbage", "later-old", "missing", "new", "old")
	if err != nil || show(few) != want {
		t.Errorf("Of six jobs = %s, %v; want %s", show(few), err, want)
	}
	many := make([]string, maxGets+1)
	for i := range many {
		many[i] = fmt.Sprint("job", i)
	}
	if all, err := last.Of(t.Context(), many...); err != nil || show(all) != want {
		t.Errorf("Of %d jobs = %s, %v; want the directory's %s", len(many), show(all), err, want)
	}
	_ = cli.Close()
	stale, err := last.All(t.Context())
	if err == nil || show(stale) != want {
		t.Errorf("All without etcd = %s, %v; want the last read %s and an error", show(stale), err, want)
	}
	if _, err := last.Of(t.Context(), "new"); err == nil {
		t.Error("Of without etcd answered no error")
	}
	if _, err := NewLast(nil, k, view); err == nil {
		t.Error("NewLast took no client")
	}
}
