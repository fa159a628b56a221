package target

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

// newTransport is the one transport every HTTP run shares. It starts from
// http.DefaultTransport (proxy from the environment, dial and TLS timeouts,
// HTTP/2) and keeps more idle connections per host: the default of 2 would
// make a busy job to one host dial afresh for most runs. A host keeps as
// many as the runs that used it at once (max_parallel bounds them), up to
// 1,024: with 64, a worker of max_parallel 256 calling one host dialed
// afresh for a fifth of its runs (docs/performance-profiles.md).
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 4096
	t.MaxIdleConnsPerHost = 1024
	t.IdleConnTimeout = 90 * time.Second
	return t
}

// doHTTP sends the job's request and decides the outcome from the status.
//
// The X-Scheduler-* headers are set after the job's own headers, so a job
// cannot override them: a target that checks the fencing token must be able
// to trust it. The whole response body is read, keeping only its tail, so the
// connection goes back to the pool; the run's timeout bounds how long that
// takes, and the tail buffer bounds the memory.
func (e *Executor) doHTTP(ctx context.Context, spec *config.HTTP, run Run) Result {
	codes, err := parseCodes(spec.SuccessCodes)
	if err != nil {
		return failed("%v", err)
	}
	req, err := newRequest(ctx, spec, run)
	if err != nil {
		return failed("target: http request: %v", err)
	}
	client := e.noFollow
	if spec.FollowRedirects {
		client = e.follow
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return stopped(ctx)
		}
		return failed("target: %v", err)
	}
	out := newTailBuffer(runs.OutputLimit)
	_, readErr := copyOut(out, resp.Body)
	resp.Body.Close()

	var res Result
	switch {
	case readErr != nil && ctx.Err() != nil:
		// The answer was not complete when the run had to end.
		res = stopped(ctx)
	case readErr != nil:
		res = failed("target: reading response body: %v", readErr)
	case codes.has(resp.StatusCode):
		res = Result{Outcome: runs.Succeeded}
	default:
		res = failed("target: http status %d is not in success codes %v", resp.StatusCode, successList(spec.SuccessCodes))
	}
	res.HTTPStatus = resp.StatusCode
	res.Output = out.String()
	return res
}

// newRequest is the run's request: the job's method, URL and headers, the
// run's input as the body (else the job's), and the run's own headers,
// which the job's cannot override.
func newRequest(ctx context.Context, spec *config.HTTP, run Run) (*http.Request, error) {
	var body io.Reader
	switch {
	case len(run.Input) > 0:
		body = bytes.NewReader(run.Input)
	case spec.Body != "":
		body = strings.NewReader(spec.Body)
	}
	req, err := http.NewRequestWithContext(ctx, spec.Method, spec.URL, body)
	if err != nil {
		return nil, err
	}
	for k, v := range spec.Headers {
		req.Header.Set(k, v)
	}
	// net/http ignores a Host header field on outgoing requests; honour it
	// the way a user writing headers: {Host: ...} means it.
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
		req.Header.Del("Host")
	}
	for _, f := range run.fields() {
		if f.header != "" {
			req.Header.Set(f.header, f.value)
		}
	}
	if len(run.Input) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func successList(codes []string) []string {
	if len(codes) == 0 {
		return defaultSuccessCodes
	}
	return codes
}
