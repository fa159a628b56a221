package jobs

import (
	"context"
	"time"
)

// unknownJob refuses a request for a job the config does not have, with
// what the person can do next (docs/operations.md): a job removed from the
// config keeps its history for a while, so it points there; a name one
// slip away from a job's names that job.
func (rr *runReader) unknownJob(ctx context.Context, name string) error {
	resp, err := rr.kv.Get(ctx, rr.keys.RemovedJob(name))
	if err == nil && len(resp.Kvs) > 0 {
		when := ""
		if at, err := time.Parse(time.RFC3339Nano, string(resp.Kvs[0].Value)); err == nil {
			when = " at " + at.UTC().Format(time.RFC3339)
		}
		return refuse(ErrUnknownJob, "job %q was removed from the config%s; its history stays readable for a while: scheduler runs %s, and scheduler jobs --removed lists the removed jobs",
			name, when, name)
	}
	if near := rr.config().NearestJob(name); near != "" {
		return refuse(ErrUnknownJob, "no job %q: did you mean %q? (scheduler jobs lists the jobs)", name, near)
	}
	return refuse(ErrUnknownJob, "no job %q in the config: scheduler jobs lists the jobs, scheduler jobs --removed the removed ones", name)
}
