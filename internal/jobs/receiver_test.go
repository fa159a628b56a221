package jobs_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
)

// receiver is a real notification sink on 127.0.0.1: it records every
// request it gets and answers what status says.
type receiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	status int
	// refuseUntil: until then every request is answered 500.
	refuseUntil time.Time
	got         []delivery
}

// delivery is one request a receiver got.
type delivery struct {
	ID     string // the X-Scheduler-Notification-Id header
	Event  string
	Record runs.Record
	Status int // what the receiver answered
	At     time.Time
	// Overdue is what an "overdue" notification says of its tick.
	Overdue *notify.Overdue
}

func startReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var msg struct {
		NotificationID string          `json:"notification_id"`
		Event          string          `json:"event"`
		Overdue        *notify.Overdue `json:"overdue"`
		runs.Record
	}
	_ = json.Unmarshal(body, &msg)
	d := delivery{ID: req.Header.Get(notify.HeaderID), Event: msg.Event, Record: msg.Record, At: time.Now(), Overdue: msg.Overdue}
	r.mu.Lock()
	d.Status = r.status
	if d.At.Before(r.refuseUntil) {
		d.Status = http.StatusInternalServerError
	}
	r.got = append(r.got, d)
	r.mu.Unlock()
	w.WriteHeader(d.Status)
}

func (r *receiver) answer(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// refuseFor makes r answer 500 to everything for d from now.
func (r *receiver) refuseFor(d time.Duration) {
	r.mu.Lock()
	r.refuseUntil = time.Now().Add(d)
	r.mu.Unlock()
}

// deliveries are the requests answered with ok (true) or not (false).
func (r *receiver) deliveries(ok bool) []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []delivery
	for _, d := range r.got {
		if (d.Status/100 == 2) == ok {
			out = append(out, d)
		}
	}
	return out
}

// sink is a config sink for r.
func (r *receiver) sink(name string, on ...string) config.Sink {
	return config.Sink{Name: name, URL: r.srv.URL + "/hook", Format: config.FormatJSON, On: on}
}

// notifies makes the receiver cfg's default sink "ops", notified of on.
func (r *receiver) notifies(cfg *config.Config, on ...string) {
	cfg.Notify.Sinks = []config.Sink{r.sink("ops", on...)}
	cfg.Notify.Default = []string{"ops"}
}

// outbox counts the notifications waiting in etcd.
func outbox(t *testing.T, cli *clientv3.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, keys.New(testPrefix).Outbox(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return int(resp.Count)
}

// finalRecords are the records of job with one of outcomes.
func finalRecords(t *testing.T, cli *clientv3.Client, job string, outcomes ...runs.Outcome) []runs.Record {
	var out []runs.Record
	for _, r := range records(t, cli, job) {
		for _, o := range outcomes {
			if r.Outcome == o {
				out = append(out, r)
			}
		}
	}
	return out
}

// outcomes counts records by outcome, for a failure message.
func outcomes(rs map[string]runs.Record) map[runs.Outcome]int {
	out := map[runs.Outcome]int{}
	for _, r := range rs {
		out[r.Outcome]++
	}
	return out
}
