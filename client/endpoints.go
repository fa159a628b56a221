package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/etcdsched/scheduler/internal/wire"
)

// Jobs lists every job of the answering replica's config.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var out []Job
	_, err := c.do(ctx, http.MethodGet, "/api/v1/jobs", nil, nil, &out)
	return out, err
}

// RemovedJob is a job gone from the config whose history is kept until
// removed_history_ttl after RemovedAt.
type RemovedJob = wire.RemovedJob

// RemovedJobs lists the removed jobs whose history is kept.
func (c *Client) RemovedJobs(ctx context.Context) ([]RemovedJob, error) {
	var out []RemovedJob
	_, err := c.do(ctx, http.MethodGet, "/api/v1/jobs", url.Values{"removed": {"true"}}, nil, &out)
	return out, err
}

// Job returns one job with its last run.
func (c *Client) Job(ctx context.Context, name string) (Job, error) {
	var out Job
	_, err := c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// Runs lists a job's finished runs, newest first: at most limit of them
// (zero: the server's default), and with before set only those recorded
// before that run's record (the page after the one it ended; a before
// naming no record of the job is the API's unknown_run).
func (c *Client) Runs(ctx context.Context, job string, limit int, before string) ([]Run, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if before != "" {
		q.Set("before", before)
	}
	var out []Run
	_, err := c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(job)+"/runs", q, nil, &out)
	return out, err
}

// Run returns one run, pending, running or finished.
func (c *Client) Run(ctx context.Context, id string) (Run, error) {
	var out Run
	_, err := c.do(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// Trigger starts a run of job now. input (nil: the job's default) is the
// run's input, a JSON object; a non-empty idempotencyKey makes a repeated
// trigger answer the first one's run, with Duplicate set.
func (c *Client) Trigger(ctx context.Context, job string, input json.RawMessage, idempotencyKey string) (Triggered, error) {
	var body any
	// No body at all when there is nothing to say: that is the request
	// every server version understands.
	if len(input) > 0 || idempotencyKey != "" {
		body = wire.TriggerBody{Input: input, IdempotencyKey: idempotencyKey}
	}
	var out Triggered
	_, err := c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(job)+"/trigger", nil, body, &out)
	return out, err
}

// PauseOptions are a pause's optional reason and end.
type PauseOptions struct {
	Reason string
	Until  time.Time // zero: until resumed
}

// Pause stops the job's scheduled runs, cluster-wide, and returns the job.
func (c *Client) Pause(ctx context.Context, job string, opts PauseOptions) (Job, error) {
	var body any
	// No body when there is nothing to say: what every server version takes.
	if opts.Reason != "" || !opts.Until.IsZero() {
		b := wire.PauseBody{Reason: opts.Reason}
		if !opts.Until.IsZero() {
			b.Until = opts.Until.Format(time.RFC3339)
		}
		body = b
	}
	var out Job
	_, err := c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(job)+"/pause", nil, body, &out)
	return out, err
}

// Resume undoes Pause and returns the job.
func (c *Client) Resume(ctx context.Context, job string) (Job, error) {
	var out Job
	_, err := c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(job)+"/resume", nil, nil, &out)
	return out, err
}

// Cancel asks for a pending or running run to be cancelled; reason (empty:
// the server's default) ends up in the run's record. The run ends a moment
// later, on the replica that runs it: Wait tells when.
func (c *Client) Cancel(ctx context.Context, runID, reason string) (Cancelled, error) {
	var body any
	if reason != "" {
		body = wire.CancelBody{Reason: reason}
	}
	var out Cancelled
	_, err := c.do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(runID)+"/cancel", nil, body, &out)
	return out, err
}

// Leader returns the current leader; an Error with CodeNoLeader while there
// is none.
func (c *Client) Leader(ctx context.Context) (Leader, error) {
	var out Leader
	_, err := c.do(ctx, http.MethodGet, "/api/v1/leader", nil, nil, &out)
	return out, err
}

// Members lists the live replicas.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var out []Member
	_, err := c.do(ctx, http.MethodGet, "/api/v1/members", nil, nil, &out)
	return out, err
}

// Slots lists every held slot.
func (c *Client) Slots(ctx context.Context) ([]Slot, error) {
	var out []Slot
	_, err := c.do(ctx, http.MethodGet, "/api/v1/slots", nil, nil, &out)
	return out, err
}

// Status describes the replica that answers.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var out Status
	_, err := c.do(ctx, http.MethodGet, "/api/v1/status", nil, nil, &out)
	return out, err
}

// Ready is nil when the replica's readiness probe answers 200, and the
// probe's answer as an *APIError otherwise. Tests wait on it before they use
// a replica they started.
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/readyz", nil, nil, nil)
	return err
}

// Metrics returns the replica's Prometheus exposition, as text.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	var out []byte
	_, err := c.do(ctx, http.MethodGet, "/metrics", nil, nil, &out)
	return string(out), err
}

// Healthy is nil when the replica's liveness probe answers 200.
func (c *Client) Healthy(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/healthz", nil, nil, nil)
	return err
}
