package replica

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// triggerJobs: a job with a default input that prints what it was given.
// Its runs queue: a trigger right after a run ends may find the slot not
// yet given back, and must not be skipped for it.
const triggerJobs = `jobs:
  - name: echo
    schedule: "0 0 1 1 *"
    catch_up: none
    overlap: queue
    input: {customer_id: default}
    exec:
      command: ["sh", "-c", "printf '%s' \"$SCHEDULER_INPUT\""]
`

// postTrigger sends POST /api/v1/jobs/{job}/trigger with body and returns
// the status and the decoded answer.
func postTrigger(t *testing.T, base, job, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(base+"/api/v1/jobs/"+url.PathEscape(job)+"/trigger", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("trigger %s: %v", job, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("trigger %s: %d %q is not JSON: %v", job, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(ax, by)
}

// Over HTTP against a real replica (docs/api.md): a first trigger with
// an idempotency key answers 202 with the run id the key names, a repeat
// 200 with the same id and "duplicate": true, while the run is pending or
// running and once it is history, and creates nothing; GET
// /api/v1/runs/{id} shows the input the run was given, which reached the
// target. A trigger without input gets the job's default.
func TestTriggerIdempotentOverHTTP(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(path, []byte(etcdtest.Config(newEtcd(t), "/trigger/", triggerJobs)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, "t1", path, noWatch)

	const first = `{"customer_id": "c-1001", "n": 1}`
	status, ans := postTrigger(t, r.url, "echo", `{"input": `+first+`, "idempotency_key": "sync-c-1001"}`)
	const id = "echo@key-sync-c-1001"
	if status != http.StatusAccepted || ans["run_id"] != id || ans["duplicate"] == true {
		t.Fatalf("first trigger: %d %v, want 202 and run_id %s, not a duplicate", status, ans, id)
	}
	// At once (pending or running) and once it is history: the same run,
	// even with another input.
	repeat := func(when string) {
		t.Helper()
		status, ans := postTrigger(t, r.url, "echo", `{"input": {"customer_id": "other"}, "idempotency_key": "sync-c-1001"}`)
		if status != http.StatusOK || ans["run_id"] != id || ans["duplicate"] != true {
			t.Errorf("repeat %s: %d %v, want 200, run_id %s and \"duplicate\": true", when, status, ans, id)
		}
	}
	repeat("at once")
	run := r.waitRun(id, "finished", 30*time.Second)
	repeat("once finished")

	if run.Outcome != "succeeded" || !sameJSON(run.Input, []byte(first)) || !sameJSON([]byte(run.Output), []byte(first)) {
		t.Errorf("GET /api/v1/runs/%s: outcome %q, input %s, output %q; want succeeded with the first trigger's input, also at the target",
			id, run.Outcome, run.Input, run.Output)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(run.Raw, &raw); err != nil || !sameJSON(raw["input"], []byte(first)) {
		t.Errorf("GET /api/v1/runs/%s: the answer's input field is %s (%v), want %s", id, raw["input"], err, first)
	}

	// Without input: the job's default, recorded and given to the target.
	status, ans = postTrigger(t, r.url, "echo", "")
	plain, _ := ans["run_id"].(string)
	if status != http.StatusAccepted || plain == "" || plain == id {
		t.Fatalf("trigger without a body: %d %v", status, ans)
	}
	run = r.waitRun(plain, "finished", 30*time.Second)
	const def = `{"customer_id": "default"}`
	if run.Outcome != "succeeded" || !sameJSON(run.Input, []byte(def)) || !sameJSON([]byte(run.Output), []byte(def)) {
		t.Errorf("run %s without input: outcome %q, input %s, output %q; want succeeded with the default %s", plain, run.Outcome, run.Input, run.Output, def)
	}

	// The repeats created nothing: two runs in the history.
	list, err := r.api.Runs(t.Context(), "echo", 50, "")
	if err != nil || len(list) != 2 {
		t.Errorf("history of echo: %d runs (%v), want the keyed one and the plain one", len(list), err)
	}
}
