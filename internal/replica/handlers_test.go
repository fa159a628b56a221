package replica

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/wire"
)

// One test per handler of the API's cluster routes (internal/api,
// handlers.go and backfill.go), each named after its handler and asking a
// real replica over HTTP.

// handlerJobs: echo ends at once, sleeper runs until cancelled, minutely
// has past ticks to backfill.
const handlerJobs = `jobs:
  - name: echo
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["echo", "hello"]
  - name: sleeper
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["sleep", "120"]
  - name: minutely
    schedule: "* * * * *"
    catch_up: none
    exec:
      command: ["true"]
`

// handlerReplica starts a replica of handlerJobs on an etcd of its own.
func handlerReplica(t *testing.T) *testReplica {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(etcdtest.Config(newEtcd(t), "/handlers/", handlerJobs)), 0o600); err != nil {
		t.Fatal(err)
	}
	return startReplica(t, "h1", path, noWatch)
}

// call sends method path with body ("": none) and returns the status and
// the body read.
func (r *testReplica) call(method, path, body string) (int, []byte) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.t.Context(), method, r.url+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		r.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return res.StatusCode, b
}

// callJSON is call expecting status and decoding the answer into v.
func (r *testReplica) callJSON(method, path, body string, status int, v any) {
	r.t.Helper()
	got, b := r.call(method, path, body)
	if got != status {
		r.t.Fatalf("%s %s: %d %s, want %d", method, path, got, b, status)
	}
	if err := json.Unmarshal(b, v); err != nil {
		r.t.Fatalf("%s %s: %s is not the JSON expected: %v", method, path, b, err)
	}
}

// wantCode checks that method path answers status with the error code.
func (r *testReplica) wantCode(method, path, body string, status int, code string) {
	r.t.Helper()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	r.callJSON(method, path, body, status, &e)
	if e.Error.Code != code {
		r.t.Errorf("%s %s: error code %q, want %q", method, path, e.Error.Code, code)
	}
}

func TestServer_leader(t *testing.T) {
	r := handlerReplica(t)
	var l struct {
		ID      string `json:"id"`
		APIAddr string `json:"api_addr"`
	}
	r.callJSON(http.MethodGet, "/api/v1/leader", "", http.StatusOK, &l)
	if l.ID != "h1" || "http://"+l.APIAddr != r.url {
		t.Errorf("leader %+v, want h1 at %s", l, r.url)
	}
}

func TestServer_members(t *testing.T) {
	r := handlerReplica(t)
	var ms []struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	}
	r.callJSON(http.MethodGet, "/api/v1/members", "", http.StatusOK, &ms)
	if len(ms) != 1 || ms[0].ID != "h1" || ms[0].Version != "test" {
		t.Errorf("members %+v, want h1 alone, version test", ms)
	}
}

// minutely's runs, due on each whole minute, may hold a slot whenever the
// test looks (CI, 2026-12-01 07:08:00): the slots asked about are the
// others'.
func TestServer_slots(t *testing.T) {
	r := handlerReplica(t)
	slots := func() []wire.Slot {
		var all, list []wire.Slot
		r.callJSON(http.MethodGet, "/api/v1/slots", "", http.StatusOK, &all)
		for _, s := range all {
			if s.Job != "minutely" {
				list = append(list, s)
			}
		}
		return list
	}
	status, b := r.call(http.MethodGet, "/api/v1/slots", "")
	var all []wire.Slot
	if err := json.Unmarshal(b, &all); status != http.StatusOK || err != nil || len(all) == 0 && strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("slots with nothing running: %d %s, want 200 [] (%v)", status, b, err)
	}
	if list := slots(); len(list) != 0 {
		t.Errorf("slots with nothing running: %+v, want none", list)
	}
	id := r.trigger("sleeper", "")
	r.waitRun(id, wire.StateRunning, 30*time.Second)
	// The slots view follows its own watch: it may see the slot a moment
	// after the run's state says running.
	var list []wire.Slot
	poll.Until(t, 30*time.Second, "the slot of "+id+" in /api/v1/slots", func() (bool, string) {
		list = slots()
		return len(list) > 0, fmt.Sprint(list)
	})
	if len(list) != 1 || list[0].Job != "sleeper" || list[0].RunID != id || list[0].Holder != "h1" {
		t.Errorf("slots while %s runs: %+v, want its slot held by h1", id, list)
	}
	// A replica stops once its runs end.
	if _, err := r.api.Cancel(t.Context(), id, ""); err != nil {
		t.Fatal(err)
	}
	r.waitRun(id, wire.StateFinished, 30*time.Second)
}

func TestServer_jobs(t *testing.T) {
	r := handlerReplica(t)
	var js []wire.Job
	r.callJSON(http.MethodGet, "/api/v1/jobs", "", http.StatusOK, &js)
	var names []string
	for _, j := range js {
		names = append(names, j.Name)
	}
	if want := []string{"echo", "sleeper", "minutely"}; !slices.Equal(names, want) {
		t.Errorf("jobs %v, want %v", names, want)
	}
	var removed []wire.RemovedJob
	r.callJSON(http.MethodGet, "/api/v1/jobs?removed=true", "", http.StatusOK, &removed)
	if len(removed) != 0 {
		t.Errorf("removed jobs %+v, want none", removed)
	}
	r.wantCode(http.MethodGet, "/api/v1/jobs?removed=maybe", "", http.StatusBadRequest, "bad_removed")
}

func TestServer_job(t *testing.T) {
	r := handlerReplica(t)
	var j wire.Job
	r.callJSON(http.MethodGet, "/api/v1/jobs/echo", "", http.StatusOK, &j)
	if j.Name != "echo" || j.Paused || j.MaxConcurrency != 1 {
		t.Errorf("job echo: %+v", j)
	}
	r.wantCode(http.MethodGet, "/api/v1/jobs/nope", "", http.StatusNotFound, "unknown_job")
}

func TestServer_runs(t *testing.T) {
	r := handlerReplica(t)
	var recs []wire.Run
	r.callJSON(http.MethodGet, "/api/v1/jobs/echo/runs", "", http.StatusOK, &recs)
	if len(recs) != 0 {
		t.Errorf("history of echo before any run: %+v", recs)
	}
	id := r.trigger("echo", "")
	r.waitRun(id, wire.StateFinished, 30*time.Second)
	r.callJSON(http.MethodGet, "/api/v1/jobs/echo/runs", "", http.StatusOK, &recs)
	if len(recs) != 1 || recs[0].RunID != id {
		t.Errorf("history of echo after run %s: %+v", id, recs)
	}
	r.wantCode(http.MethodGet, "/api/v1/jobs/nope/runs", "", http.StatusNotFound, "unknown_job")
}

func TestServer_run(t *testing.T) {
	r := handlerReplica(t)
	id := r.trigger("echo", "")
	poll.Until(t, 30*time.Second, "run "+id+" finished", func() (bool, string) {
		var run wire.Run
		r.callJSON(http.MethodGet, "/api/v1/runs/"+id, "", http.StatusOK, &run)
		return run.State == wire.StateFinished && run.Outcome == "succeeded", run.State
	})
	r.wantCode(http.MethodGet, "/api/v1/runs/echo@nope", "", http.StatusNotFound, "unknown_run")
}

func TestServer_trigger(t *testing.T) {
	r := handlerReplica(t)
	var tr wire.Triggered
	r.callJSON(http.MethodPost, "/api/v1/jobs/echo/trigger", `{"idempotency_key": "k1"}`, http.StatusAccepted, &tr)
	if tr.RunID != "echo@key-k1" || tr.Duplicate {
		t.Errorf("trigger: %+v, want run echo@key-k1, not a duplicate", tr)
	}
	r.callJSON(http.MethodPost, "/api/v1/jobs/echo/trigger", `{"idempotency_key": "k1"}`, http.StatusOK, &tr)
	if tr.RunID != "echo@key-k1" || !tr.Duplicate {
		t.Errorf("repeated trigger: %+v, want run echo@key-k1, a duplicate", tr)
	}
	r.wantCode(http.MethodPost, "/api/v1/jobs/echo/trigger", `{"inptu": {}}`, http.StatusBadRequest, "bad_body")
	r.wantCode(http.MethodPost, "/api/v1/jobs/nope/trigger", "", http.StatusNotFound, "unknown_job")
}

func TestServer_pause(t *testing.T) {
	r := handlerReplica(t)
	var j wire.Job
	r.callJSON(http.MethodPost, "/api/v1/jobs/echo/pause", `{"reason": "maintenance"}`, http.StatusOK, &j)
	if !j.Paused || j.PauseReason != "maintenance" {
		t.Errorf("pause answered %+v, want echo paused for maintenance", j)
	}
	r.callJSON(http.MethodGet, "/api/v1/jobs/echo", "", http.StatusOK, &j)
	if !j.Paused {
		t.Errorf("GET after pause: %+v, want paused", j)
	}
	r.wantCode(http.MethodPost, "/api/v1/jobs/echo/pause", `{"until": "tomorrow"}`, http.StatusBadRequest, "bad_body")
}

func TestServer_resume(t *testing.T) {
	r := handlerReplica(t)
	var j wire.Job
	r.callJSON(http.MethodPost, "/api/v1/jobs/echo/pause", "", http.StatusOK, &j)
	r.callJSON(http.MethodPost, "/api/v1/jobs/echo/resume", "", http.StatusOK, &j)
	if j.Paused || j.PauseReason != "" {
		t.Errorf("resume answered %+v, want echo not paused", j)
	}
	r.wantCode(http.MethodPost, "/api/v1/jobs/nope/resume", "", http.StatusNotFound, "unknown_job")
}

func TestServer_cancel(t *testing.T) {
	r := handlerReplica(t)
	id := r.trigger("sleeper", "")
	r.waitRun(id, wire.StateRunning, 30*time.Second)
	var c wire.Cancelled
	r.callJSON(http.MethodPost, "/api/v1/runs/"+id+"/cancel", `{"reason": "enough"}`, http.StatusAccepted, &c)
	if c.RunID != id || c.Status != wire.CancelRequested {
		t.Errorf("cancel answered %+v", c)
	}
	if run := r.waitRun(id, wire.StateFinished, 30*time.Second); run.Outcome != "cancelled" {
		t.Errorf("run %s ended %q, want cancelled", id, run.Outcome)
	}
	r.wantCode(http.MethodPost, "/api/v1/runs/"+id+"/cancel", "", http.StatusConflict, "run_finished")
}

func TestServer_backfill(t *testing.T) {
	r := handlerReplica(t)
	// Two past minutes of minutely, before the leader took the job up.
	from := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	body := `{"from": "` + from.Format(time.RFC3339) + `", "to": "` + from.Add(2*time.Minute).Format(time.RFC3339) + `"}`
	var res wire.Backfill
	poll.Until(t, 30*time.Second, "the leader takes minutely up", func() (bool, string) {
		status, b := r.call(http.MethodPost, "/api/v1/jobs/minutely/backfill", body)
		if status == http.StatusConflict {
			return false, string(b)
		}
		if status != http.StatusOK {
			t.Fatalf("backfill: %d %s, want 200", status, b)
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("backfill: %s: %v", b, err)
		}
		return true, ""
	})
	if res.Job != "minutely" || len(res.Queued) != 2 || len(res.SkippedExisting) != 0 {
		t.Errorf("backfill of two past minutes: %+v, want both queued", res)
	}
	r.wantCode(http.MethodPost, "/api/v1/jobs/minutely/backfill", `{"from": "`+from.Format(time.RFC3339)+`"}`, http.StatusBadRequest, "bad_body")
}
