package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Body is what a sink receives: for json, the run record with the event
// and the notification id beside its fields; for slack, a one-line
// {"text": ...} summary.
func Body(format string, n *Notification) ([]byte, error) {
	if format == config.FormatSlack {
		return json.Marshal(map[string]string{"text": Summary(n)})
	}
	return json.Marshal(struct {
		NotificationID string   `json:"notification_id"`
		Event          string   `json:"event"`
		Overdue        *Overdue `json:"overdue,omitempty"`
		runs.Record
	}{n.ID, n.Event, n.Overdue, n.Record})
}

// Summary is the one-line text of a notification.
func Summary(n *Notification) string {
	r := &n.Record
	s := fmt.Sprintf("%s: run %s %s", r.Job, r.RunID, n.Event)
	switch {
	case n.Event == config.Recovered:
		s = fmt.Sprintf("%s recovered: run %s succeeded", r.Job, r.RunID)
	case n.Event == config.Failing:
		s = fmt.Sprintf("%s failing: run %s %s after a success", r.Job, r.RunID, r.Outcome)
	case n.Overdue != nil:
		return overdueSummary(r, n.Overdue)
	}
	if r.Attempt > 1 {
		s += fmt.Sprintf(" (attempt %d)", r.Attempt)
	}
	if r.Error != "" && n.Event != config.Recovered {
		s += ": " + r.Error
	}
	return s
}

// Sender POSTs notifications.
type Sender struct {
	Client *http.Client
	// Timeout bounds one request, so a hanging receiver holds a delivery
	// slot of its own sink for at most this long.
	Timeout time.Duration
}

// NewSender is a sender whose requests last at most timeout and follow no
// redirects (a sink answers, it does not forward).
func NewSender(timeout time.Duration) *Sender {
	return &Sender{Timeout: timeout, Client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// ErrStatus is an answer other than 2xx.
var ErrStatus = errors.New("notify: not delivered")

// Post delivers n to sink; nil means the sink answered 2xx. Errors name
// neither the URL nor a header: both may hold secrets.
func (s *Sender) Post(ctx context.Context, sink *config.Sink, n *Notification) error {
	body, err := Body(sink.Format, n)
	if err != nil {
		return fmt.Errorf("notify: %s: %w", n.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sink.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("notify: sink %s: invalid request", sink.Name)
	}
	for k, v := range sink.Headers {
		req.Header.Set(k, v)
	}
	// The scheduler's own headers win over the sink's.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderID, n.ID)
	resp, err := s.Client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("notify: sink %s: %w", sink.Name, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: sink %s answered %d", ErrStatus, sink.Name, resp.StatusCode)
	}
	return nil
}

// overdueSummary is the line of an "overdue" notification: the tick, what
// it is so far and the job's last success.
func overdueSummary(r *runs.Record, o *Overdue) string {
	s := fmt.Sprintf("%s overdue: tick %s not succeeded by %s (%s)", r.Job, r.RunID, o.DueAt.UTC().Format(time.RFC3339), o.Outcome)
	if o.LastSucceededRunID == "" {
		return s + "; no success known"
	}
	return s + fmt.Sprintf("; last succeeded run %s ended %s", o.LastSucceededRunID, o.LastSucceededEndedAt.UTC().Format(time.RFC3339))
}
