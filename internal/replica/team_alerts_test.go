package replica

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// sinkServer records the job of every notification POSTed to it.
type sinkServer struct {
	mu   sync.Mutex
	jobs []string
	url  string
}

func newSinkServer(t *testing.T) *sinkServer {
	s := &sinkServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Job string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.jobs = append(s.jobs, body.Job)
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *sinkServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.jobs)
}

// A team's notify.default is where its jobs' alerts go: a failing
// payments job reaches the payments sink and not the search team's, and
// its runs are counted with team="payments".
func TestTeamAlertsReachTheOwner(t *testing.T) {
	endpoint := newEtcd(t)
	dir := t.TempDir()
	payments, search := newSinkServer(t), newSinkServer(t)
	if err := os.Mkdir(filepath.Join(dir, "teams"), 0o755); err != nil {
		t.Fatal(err)
	}
	team := func(name, url, job string) string {
		return fmt.Sprintf("team: %[1]s\nnotify:\n  sinks:\n    - {name: %[1]s-oncall, url: %[2]q}\n  default: [%[1]s-oncall]\n"+
			"jobs:\n  - name: %[3]s\n    schedule: \"0 0 1 1 *\"\n    catch_up: none\n    exec:\n      command: [\"false\"]\n", name, url, job)
	}
	writeFile(t, filepath.Join(dir, "teams", "payments.yaml"), team("payments", payments.url, "settle"))
	writeFile(t, filepath.Join(dir, "teams", "search.yaml"), team("search", search.url, "reindex"))
	path := filepath.Join(dir, "config.yaml")
	writeFile(t, path, "include: [\"teams/*.yaml\"]\n"+etcdtest.Config(endpoint, "/alerts/", "jobs: []\n"))
	r := startReplica(t, "t4", path, noWatch)

	r.waitRun(r.trigger("settle", ""), "finished", 20*time.Second)
	poll.Until(t, 20*time.Second, "payments sink notified", func() (bool, string) {
		got := payments.got()
		return len(got) > 0, fmt.Sprint(got)
	})
	// search fails too, so that its sink has had time to get anything
	// payments' failure would have sent it.
	r.waitRun(r.trigger("reindex", ""), "finished", 20*time.Second)
	poll.Until(t, 20*time.Second, "search sink notified", func() (bool, string) {
		got := search.got()
		return len(got) > 0, fmt.Sprint(got)
	})
	if got := payments.got(); !slices.Equal(got, []string{"settle"}) {
		t.Errorf("payments sink got %v, want [settle]", got)
	}
	if got := search.got(); !slices.Equal(got, []string{"reindex"}) {
		t.Errorf("search sink got %v, want [reindex]", got)
	}
	if got := r.metric(`scheduler_runs_total{job="settle",outcome="failed",team="payments"}`); got != 1 {
		t.Errorf(`scheduler_runs_total{job="settle",outcome="failed",team="payments"} = %v, want 1`, got)
	}
	// The slots gauge carries the team too (0: the run ended).
	if got := r.metric(`scheduler_slots_in_use{job="settle",team="payments"}`); got != 0 {
		t.Errorf(`scheduler_slots_in_use{job="settle",team="payments"} = %v, want 0 (and present)`, got)
	}
	run, err := r.api.Runs(t.Context(), "settle", 10, "")
	if err != nil || len(run) != 1 || run[0].Team != "payments" {
		t.Errorf("runs of settle: %+v, %v; want one of team payments", run, err)
	}
}
