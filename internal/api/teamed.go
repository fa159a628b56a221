package api

import (
	"context"
	"slices"

	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// teamed is the cluster as a caller sees it (docs/configuration.md,
// "Teams and tokens"): every job and run carries its team, and with
// protect_reads a scoped token's lists hold only the jobs it may read.
type teamed struct {
	Cluster
	s *Server
}

func (t teamed) team(job string) string {
	team, _ := t.s.teamOf(job)
	return team
}

func (t teamed) job(j jobs.JobStatus, err error) (jobs.JobStatus, error) {
	if err == nil {
		j.Team = t.team(j.Name)
		if j.LastRun != nil {
			j.LastRun.Team = j.Team
		}
	}
	return j, err
}

func (t teamed) Jobs(ctx context.Context, page jobs.Page) ([]jobs.JobStatus, string, error) {
	list, next, err := t.Cluster.Jobs(ctx, page)
	if err != nil {
		return list, next, err
	}
	c := callerOf(ctx)
	out := list[:0]
	for _, j := range list {
		j, _ = t.job(j, nil)
		if c.mayRead(j.Team) {
			out = append(out, j)
		}
	}
	return out, next, nil
}

func (t teamed) Job(ctx context.Context, name string) (jobs.JobStatus, error) {
	return t.job(t.Cluster.Job(ctx, name))
}

func (t teamed) Pause(ctx context.Context, name string, req jobs.PauseRequest) (jobs.JobStatus, error) {
	return t.job(t.Cluster.Pause(ctx, name, req))
}

func (t teamed) Resume(ctx context.Context, name string) (jobs.JobStatus, error) {
	return t.job(t.Cluster.Resume(ctx, name))
}

func (t teamed) Runs(ctx context.Context, job string, page jobs.Page) ([]runs.Record, string, error) {
	list, next, err := t.Cluster.Runs(ctx, job, page)
	team := t.team(job)
	for i := range list {
		list[i].Team = team
	}
	return list, next, err
}

func (t teamed) FindRun(ctx context.Context, runID string) (jobs.RunStatus, error) {
	r, err := t.Cluster.FindRun(ctx, runID)
	if err == nil {
		r.Team = t.team(r.Job)
	}
	return r, err
}

// readableSlots are the slots of list the caller of ctx may read: a job's
// by its team, a resource's by the team of the job whose run holds it.
func (s *Server) readableSlots(ctx context.Context, list []slots.Info) []slots.Info {
	c := callerOf(ctx)
	if c.scope == nil {
		return list
	}
	out := make([]slots.Info, 0, len(list))
	for _, si := range list {
		job := si.Job
		if job == "" {
			job = runs.JobOf(si.RunID)
		}
		if team, _ := s.teamOf(job); c.mayRead(team) {
			out = append(out, si)
		}
	}
	return out
}

// readableRemoved are the removed jobs the caller of ctx may read: a
// removed job's file, and so its team, is gone, and it reads as a job of
// the main file (team "").
func readableRemoved(ctx context.Context, list []jobs.RemovedJob) []jobs.RemovedJob {
	if c := callerOf(ctx); c.scope != nil && !c.mayRead("") {
		return nil
	}
	return list
}

// Slots names the team of each job's slot; a resource's slot has none.
func (t teamed) Slots(ctx context.Context) ([]slots.Info, error) {
	list, err := t.Cluster.Slots(ctx)
	list = slices.Clone(list)
	for i := range list {
		if list[i].Job != "" {
			list[i].Team = t.team(list[i].Job)
		}
	}
	return list, err
}
