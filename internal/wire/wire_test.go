package wire

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The bodies keep the field names the API had when the server and the
// client each declared their own (docs/api.md and the black-box tests use them):
// each type, filled in full, writes exactly these keys, and reads back as
// it was written.
func TestBodiesKeepTheirFieldNames(t *testing.T) {
	at := time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC)
	code, left := 3, 7
	record := runs.Record{RunID: "j@1", Job: "j", Team: "t", Attempt: 2, Trigger: runs.Manual, ScheduledAt: at, StartedAt: at, EndedAt: at,
		Holder: "r1", Slot: 1, FencingToken: 9, Outcome: runs.Failed, ExitCode: &code, HTTPStatus: 500, Error: "e", Output: "o",
		Input: json.RawMessage(`{"a":1}`), UpstreamRunID: "u@1"}
	recordKeys := "run_id job team attempt trigger scheduled_at started_at ended_at holder slot fencing_token outcome exit_code http_status error output input upstream_run_id"
	for _, tc := range []struct {
		name string
		v    any
		keys string
	}{
		{"run", &Run{State: StateFinished, Record: record}, "state " + recordKeys},
		{"job", &Job{Name: "j", Team: "t", Spec: config.Job{Name: "j", Schedule: "@every 1s"}, Paused: true, PauseReason: "r", PausedAt: at, PausedUntil: at,
			NextRun: at, LastRun: &record, Running: 1, MaxConcurrency: 2, Pending: 3, Scheduled: 4, After: &config.After{Job: "up"},
			PendingNotifications: 5, RemainingRuns: &left, Overdue: true, LastSucceededAt: at},
			"name team spec paused pause_reason paused_at paused_until next_run last_run running max_concurrency pending scheduled after pending_notifications remaining_runs overdue last_succeeded_at"},
		{"removed job", &RemovedJob{Name: "j", RemovedAt: at}, "name removed_at"},
		{"triggered", &Triggered{RunID: "j@1", Duplicate: true}, "run_id duplicate"},
		{"cancelled", &Cancelled{RunID: "j@1", Status: CancelRequested}, "run_id status"},
		{"backfill", &Backfill{Job: "j", From: at, To: at, Queued: []string{"a"}, SkippedExisting: []string{"b"}, LeftToSchedule: []string{"c"}},
			"job from to queued skipped_existing left_to_schedule"},
		{"leader", &Leader{ID: "r1", APIAddr: "a:1", Since: at, Revision: 5}, "id api_addr since revision"},
		{"member", &Member{ID: "r1", APIAddr: "a:1", Version: "v", ConfigHash: "h", StartedAt: at, Protocol: 2, IsLeader: true},
			"id api_addr version config_hash started_at protocol is_leader"},
		{"status", &Status{ID: "r1", Version: "v", IsLeader: true, ConfigFile: "f", ConfigHash: "h", ConfigFiles: []config.File{{Path: "f", Hash: "h"}}, LastReloadError: "e", LastReloadAt: at,
			StartedAt: at, EtcdEndpoints: []string{"e"}, EmbeddedEtcd: true, Leader: "r1", PendingNotifications: 1,
			PendingBySink: map[string]int{"s": 1}, OldestNotification: at},
			"id version is_leader config_file config_hash config_files last_reload_error last_reload_at started_at etcd_endpoints embedded_etcd leader pending_notifications pending_by_sink oldest_notification"},
		{"slot", &Slot{Job: "j", ConcurrencyKey: "k", Resource: "r", Slot: 1, RunID: "j@1", Holder: "r1", FencingToken: 9, StartedAt: at, ScheduledAt: at},
			"job concurrency_key resource slot run_id holder fencing_token started_at scheduled_at"},
		{"window", &Slot{Window: &Window{Window: "job/j", Count: 2, Per: "1m0s", InUse: 1, Oldest: at}}, "window count per in_use oldest"},
		{"trigger body", &TriggerBody{Input: json.RawMessage(`{"a":1}`), IdempotencyKey: "k"}, "input idempotency_key"},
		{"pause body", &PauseBody{Reason: "r", Until: "2026-11-25T22:00:00Z"}, "reason until"},
		{"cancel body", &CancelBody{Reason: "r"}, "reason"},
		{"backfill body", &BackfillBody{From: "f", To: "t"}, "from to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(b, &fields); err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(maps.Keys(fields))
			want := strings.Fields(tc.keys)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("keys %v\nwant %v", got, want)
			}
			back := reflect.New(reflect.TypeOf(tc.v).Elem())
			if err := json.Unmarshal(b, back.Interface()); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back.Interface())
			if string(again) != string(b) {
				t.Fatalf("read back and written again:\n%s\nwant\n%s", again, b)
			}
		})
	}
}

// A slot row and a window row come apart on reading: the window's row
// has no slot fields, a slot's row no window.
func TestSlotRowsReadAsSlotsOrWindows(t *testing.T) {
	var rows []Slot
	body := `[{"job":"j","slot":0,"run_id":"j@1","holder":"r1","fencing_token":9,"started_at":"2026-11-25T21:00:00Z","scheduled_at":"2026-11-25T21:00:00Z"},
		{"window":"job/j","count":2,"per":"1m0s","in_use":1}]`
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Window != nil || rows[0].Job != "j" || rows[1].Window == nil || rows[1].Window.InUse != 1 || rows[1].RunID != "" {
		t.Fatalf("rows: %+v", rows)
	}
}
