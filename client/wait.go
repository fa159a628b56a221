package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Wait polls the run every interval until it is finished, and returns its
// record. A replica that has no answer for a while (a leader change, etcd
// away for a moment: no answer or 503) does not end the wait: the run goes
// on meanwhile, and only ctx decides how long the caller waits. Any other
// error, such as an unknown run, ends it.
func (c *Client) Wait(ctx context.Context, runID string, interval time.Duration) (Run, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		run, err := c.Run(ctx, runID)
		switch {
		case err == nil && run.State == StateFinished:
			return run, nil
		case err != nil && !transient(err):
			return Run{}, fmt.Errorf("client: wait for %s: %w", runID, err)
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("run still %s", run.State)
			}
			return Run{}, fmt.Errorf("client: wait for %s: %w (%w)", runID, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// transient says whether a failed request is worth asking again.
func transient(err error) bool {
	if e, ok := AsError(err); ok {
		return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusBadGateway || e.Status == http.StatusGatewayTimeout
	}
	var u *UnreachableError
	return errors.As(err, &u)
}
