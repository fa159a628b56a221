package follow

import (
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
)

// pausingOutcomes are the final outcomes that pause a job with
// pause_on_failure (docs/configuration.md#jobs).
var pausingOutcomes = map[runs.Outcome]bool{runs.Failed: true, runs.TimedOut: true, runs.Lost: true}

// pauseOnFailure is the pause that rec, a final record of job, causes when
// the job says pause_on_failure: written in the record's own transaction
// (Record is only ever part of it, and only for a run's last attempt), so
// no failure can be recorded without its pause nor a pause written for a
// record that was not. A job already paused keeps its pause (the
// operator's reason and until); one resumed over its file's paused: true
// ("false" stored) is paused again. It is a nested transaction whose first
// compare is the pause key, kept once per job by MergeHealth as the health
// transitions are. The notification of event paused goes with it, to the
// job's sinks that ask for it.
func pauseOnFailure(k keys.Layout, cfg *config.Config, job *config.Job, rec *runs.Record, now time.Time) []clientv3.Op {
	if job == nil || !job.PauseOnFailure || !pausingOutcomes[rec.Outcome] {
		return nil
	}
	key := k.Paused(rec.Job)
	p := pause.Marker{Reason: fmt.Sprintf("paused after run %s %s", rec.RunID, rec.Outcome), At: now.UTC()}
	then := []clientv3.Op{clientv3.OpPut(key, pause.Encode(p))}
	for _, s := range cfg.SinksOf(job) {
		if s.Wants(config.Paused) {
			n := notify.New(s.Name, config.Paused, rec, now)
			then = append(then, clientv3.OpPut(k.Notification(s.Name, n.ID), n.Encode()))
		}
	}
	absent := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	resumed := clientv3.Compare(clientv3.Value(key), "=", pause.Resumed)
	return []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{absent}, then, []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{resumed}, then, nil)})}
}
