package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/wire"
)

// viewJobs: a keyed job whose runs last, and a job limited by a rate
// window only.
const viewJobs = `jobs:
  - name: keyed
    schedule: "0 0 1 1 *"
    catch_up: none
    max_concurrency: 1
    overlap: queue
    concurrency_key: "{{ .Input.k }}"
    exec:
      command: ["sleep", "60"]
      kill_grace: 1s
  - name: metered
    schedule: "0 0 1 1 *"
    catch_up: none
    max_concurrency: 5
    rate: {count: 3, per: 1m}
    exec:
      command: ["true"]
`

// What an operator sees of limits against a real replica: two keys of a
// keyed job running show as "2/1 per key" (the limit holds per key), the
// slots table names each slot's key, and a rate window with three starts
// shows as a window row with its count, period and use, the same use the
// JSON reports.
func TestClientLimitViews(t *testing.T) {
	etcd := etcdtest.Start(t)
	p := startProc(t, "a", writeConfig(t, etcd.Endpoints()[0], "/views/", viewJobs))
	srv := []string{"--server", p.url}
	ctx := context.Background()
	var keyed []string
	for _, k := range []string{"eu-west-1", "us-east-2"} {
		tr, err := p.api.Trigger(ctx, "keyed", json.RawMessage(`{"k":"`+k+`"}`), "")
		if err != nil {
			t.Fatal(err)
		}
		p.waitRunning(tr.RunID)
		keyed = append(keyed, tr.RunID)
	}
	for range 3 {
		if _, err := p.api.Wait(ctx, p.trigger("metered"), 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := cli(t, append([]string{"jobs"}, srv...)...)
	if code != 0 || !strings.Contains(out, "2/1 per key") || !strings.Contains(out, "0/5 ") {
		t.Errorf("jobs: exit %d, want keyed at 2/1 per key and metered at 0/5\n%s%s", code, out, errOut)
	}

	out, errOut, code = cli(t, append([]string{"slots"}, srv...)...)
	held, windows, _ := strings.Cut(out, "\n\n")
	if code != 0 || !strings.HasPrefix(held, "SLOT  KEY ") {
		t.Fatalf("slots: exit %d, want the held slots with a KEY column\n%s%s", code, out, errOut)
	}
	for i, k := range []string{"eu-west-1", "us-east-2"} {
		if !strings.Contains(held, " "+k+" ") || !strings.Contains(held, " "+keyed[i]+" ") {
			t.Errorf("slots: want key %s and run %s\n%s", k, keyed[i], held)
		}
	}
	out, _, _ = cli(t, append([]string{"slots", "-o", "json"}, srv...)...)
	var list []client.Slot
	decodes(t, out, &list)
	var window wire.Window
	for _, s := range list {
		if s.Window != nil {
			window = *s.Window
		}
	}
	if window.InUse != 3 || window.Oldest.IsZero() {
		t.Fatalf("slots -o json: want a window with in_use 3: %+v", list)
	}
	lines := strings.Split(strings.TrimSpace(windows), "\n")
	want := []string{window.Window, "3/1m", "3", stamp(window.Oldest)}
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "WINDOW COUNT/PER IN USE OLDEST" ||
		strings.Join(strings.Fields(lines[1]), " ") != strings.Join(want, " ") {
		t.Errorf("slots: want the window as %q\n%s", want, out)
	}
}
