package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// jobView is what GET /api/v1/jobs shows of a job's notifications and
// chaining (docs/notify.md).
type jobView struct {
	Name                 string `json:"name"`
	PendingNotifications *int   `json:"pending_notifications"`
	After                *struct {
		Job string   `json:"job"`
		On  []string `json:"on"`
	} `json:"after"`
}

// jobViews reads GET /api/v1/jobs, by name.
func (r *testReplica) jobViews() (map[string]jobView, error) {
	js, err := r.api.Jobs(context.Background())
	if err != nil {
		return nil, err
	}
	out := map[string]jobView{}
	for _, j := range js {
		var v jobView
		if err := json.Unmarshal(j.Raw, &v); err != nil {
			return nil, err
		}
		out[v.Name] = v
	}
	return out, nil
}

// GET /api/v1/jobs shows the notifications a job's runs wrote and its sink
// has not taken yet, and, for a chained job, the job it runs after.
func TestJobsShowPendingNotificationsAndUpstream(t *testing.T) {
	var refusing atomic.Bool
	refusing.Store(true)
	var got atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		if refusing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(sink.Close)
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(etcdtest.Config(newEtcd(t), "/notes/", fmt.Sprintf(`notify:
  sinks:
    - name: ops
      url: %s/hook
      format: json
      on: [failed]
  default: [ops]
jobs:
  - name: extract
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["false"]
  - name: transform
    schedule: "@manually"
    after: {job: extract, on: [failed]}
    exec:
      command: ["true"]
`, sink.URL))), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, "n1", path)
	id := r.trigger("extract", "")
	if run := r.waitRun(id, "finished", 30*time.Second); run.Outcome != "failed" {
		t.Fatalf("run %s of extract: %s, want failed", id, run.Raw)
	}

	poll.Until(t, 30*time.Second, "extract's notification pending, refused by its sink", func() (bool, string) {
		js, err := r.jobViews()
		if err != nil {
			return false, err.Error()
		}
		e := js["extract"]
		if e.PendingNotifications == nil || *e.PendingNotifications != 1 || got.Load() == 0 {
			return false, fmt.Sprintf("extract %+v, %d tries at the sink", e, got.Load())
		}
		return true, ""
	})
	js, err := r.jobViews()
	if err != nil {
		t.Fatal(err)
	}
	tr, ex := js["transform"], js["extract"]
	if tr.After == nil || tr.After.Job != "extract" || !slices.Equal(tr.After.On, []string{"failed"}) {
		t.Errorf("transform shows after %+v, want extract on [failed]", tr.After)
	}
	if ex.After != nil {
		t.Errorf("extract shows after %+v, it is chained after nothing", ex.After)
	}
	if tr.PendingNotifications == nil || *tr.PendingNotifications != 0 {
		t.Errorf("transform shows %v pending notifications, want 0", tr.PendingNotifications)
	}

	// Once the sink takes it, it is pending no more.
	refusing.Store(false)
	poll.Until(t, 60*time.Second, "extract's notification delivered", func() (bool, string) {
		js, err := r.jobViews()
		if err != nil {
			return false, err.Error()
		}
		e := js["extract"]
		return e.PendingNotifications != nil && *e.PendingNotifications == 0, fmt.Sprintf("extract %+v", e)
	})
}
