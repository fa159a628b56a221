package jobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// metric is the value of the sample of name with labels in reg; 0 when
// there is none.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue samples
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func sent(t *testing.T, reg *prometheus.Registry, result string) float64 {
	return metric(t, reg, "scheduler_notifications_total", map[string]string{"sink": "ops", "result": result})
}

func pendingGauge(t *testing.T, reg *prometheus.Registry) float64 {
	return metric(t, reg, "scheduler_notifications_pending", nil)
}

// logged keeps the log lines of a node.
type logged struct {
	mu    sync.Mutex
	lines []slog.Record
}

func (l *logged) Enabled(context.Context, slog.Level) bool { return true }
func (l *logged) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.lines = append(l.lines, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logged) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logged) WithGroup(string) slog.Handler      { return l }

// find returns the lines with msg, each as its attributes.
func (l *logged) find(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.lines {
		if r.Message != msg {
			continue
		}
		attrs := map[string]any{"time": r.Time}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.Any()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

// failingJob starts a node with a job whose runs fail and a sink "ops" for
// rcv that wants failed runs, and triggers n runs; it returns the failed
// records once every run ended.
func failingJob(t *testing.T, rcv *receiver, n int, tm timing, maxAge time.Duration) (*node, []runs.Record) {
	t.Helper()
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("fails", "@yearly", w.url("status=500"))
	job.MaxConcurrency = n
	cfg := newConfig(job)
	rcv.notifies(cfg, "failed")
	cfg.Notify.MaxAge = config.Duration(maxAge)
	nd := etcd.nodeWith("solo", cfg, tm)
	leaderOf(t, []*node{nd})
	for range n {
		nd.trigger(t, "fails", "")
	}
	poll.Until(t, 60*time.Second, "every run ended", func() (bool, string) {
		rs := records(t, nd.client, "fails")
		return len(rs) == n, fmt.Sprint(outcomes(rs))
	})
	failed := finalRecords(t, nd.client, "fails", runs.Failed)
	if len(failed) == 0 {
		t.Fatalf("no run failed: %v", outcomes(records(t, nd.client, "fails")))
	}
	return nd, failed
}

// While the sink refuses, the notifications wait, counted pending, and
// every refused try is counted retried; once it answers, each is counted
// delivered once and nothing is pending.
func TestNotificationMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	rcv := startReceiver(t, http.StatusInternalServerError)
	n, failed := failingJob(t, rcv, 3, timing{Reg: reg}, time.Hour)
	want := float64(len(failed))

	poll.Until(t, 60*time.Second, "every notification pending and retried", func() (bool, string) {
		left, pending, retried := outbox(t, n.client), pendingGauge(t, reg), sent(t, reg, "retried")
		refused := len(rcv.deliveries(false))
		return left == len(failed) && pending == want && retried >= want && float64(refused) >= retried,
			fmt.Sprintf("outbox %d, pending %v, retried %v, refused %d, of %d", left, pending, retried, refused, len(failed))
	})
	if got := sent(t, reg, "delivered"); got != 0 {
		t.Errorf("delivered %v while the sink refuses everything", got)
	}

	rcv.answer(http.StatusOK)
	poll.Until(t, 60*time.Second, "every notification delivered", func() (bool, string) {
		left, pending, ok := outbox(t, n.client), pendingGauge(t, reg), sent(t, reg, "delivered")
		return left == 0 && pending == 0 && ok == want,
			fmt.Sprintf("outbox %d, pending %v, delivered %v of %d", left, pending, ok, len(failed))
	})
	if got, refused := sent(t, reg, "retried"), len(rcv.deliveries(false)); got != float64(refused) {
		t.Errorf("retried %v, but the sink refused %d tries", got, refused)
	}
	if got := len(rcv.deliveries(true)); float64(got) != want {
		t.Errorf("the sink took %d notifications, delivered counts %v", got, want)
	}
	if got := sent(t, reg, "dropped"); got != 0 {
		t.Errorf("dropped %v, none was older than max_age", got)
	}
}

// A notification its sink refuses for longer than notify.max_age is
// deleted from the outbox unsent, no earlier than max_age after its run
// ended, counted dropped, and logged with its id.
func TestOldNotificationsAreDropped(t *testing.T) {
	const maxAge = 3 * time.Second
	reg := prometheus.NewRegistry()
	log := &logged{}
	rcv := startReceiver(t, http.StatusInternalServerError)
	n, failed := failingJob(t, rcv, 1, timing{Reg: reg, Log: slog.New(log)}, maxAge)
	rec := failed[0]
	id := notify.ID(rec.RunID, rec.Attempt, "failed")

	poll.Until(t, 60*time.Second, "the notification dropped", func() (bool, string) {
		left, dropped := outbox(t, n.client), sent(t, reg, "dropped")
		return left == 0 && dropped == 1, fmt.Sprintf("outbox %d, dropped %v", left, dropped)
	})
	if got := pendingGauge(t, reg); got != 0 {
		t.Errorf("pending %v after the drop", got)
	}
	if got := sent(t, reg, "delivered"); got != 0 {
		t.Errorf("delivered %v", got)
	}
	tries := 0
	for _, d := range rcv.deliveries(false) {
		if d.ID != id {
			t.Errorf("the sink was sent %s, want only %s", d.ID, id)
		}
		tries++
	}
	if tries == 0 {
		t.Errorf("dropped without a try")
	}
	lines := log.find("notification dropped: not delivered within notify.max_age")
	if len(lines) != 1 {
		t.Fatalf("%d log lines of the drop, want 1: %v", len(lines), lines)
	}
	line := lines[0]
	if line["id"] != id || line["sink"] != "ops" || line["run_id"] != rec.RunID || line["max_age"] != maxAge {
		t.Errorf("drop logged as %v, want id %s, sink ops, run %s, max_age %s", line, id, rec.RunID, maxAge)
	}
	if at := line["time"].(time.Time); at.Sub(rec.EndedAt) < maxAge {
		t.Errorf("dropped %s after the run ended, before max_age %s", at.Sub(rec.EndedAt), maxAge)
	}
}
