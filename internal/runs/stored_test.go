package runs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A stored record reads back as the record that was written, so what the
// API, the notifications and the CLI show of it is what they showed when
// records were stored in full; and a record stored in full (by an older
// version) reads back as itself.
func TestStoredRecordReadsBackTheSame(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 0, 1, 0, time.UTC)
	code := 0
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{
		{RunID: ID("a", at), Job: "a", Attempt: 1, Trigger: Schedule, ScheduledAt: at, StartedAt: at, EndedAt: at.Add(time.Second),
			Holder: "r1", Slot: 0, FencingToken: 9, Outcome: Succeeded, ExitCode: &code},
		{RunID: ID("a", at), Job: "a", Attempt: 3, Trigger: Retry, ScheduledAt: at, Slot: 2, Outcome: Failed, HTTPStatus: 500,
			Previous: []Attempt{{Attempt: 1, Outcome: Lost}, {Attempt: 2, Outcome: TimedOut}}, Input: json.RawMessage(`{"k":1}`), ConcurrencyKey: "k1"},
		{RunID: ID("a", at), Job: "a", Attempt: 1, Trigger: Schedule, ScheduledAt: at, Slot: -1, Outcome: Missed, Error: "late"},
		{RunID: ManualID("a", "01J"), Job: "a", Attempt: 1, Trigger: Manual, ScheduledAt: at.Add(time.Millisecond), Slot: -1, Outcome: Cancelled},
		{RunID: ChainID("b", ID("a", at)), Job: "b", Attempt: 1, Trigger: Chain, ScheduledAt: at, Slot: 0, Outcome: Succeeded, UpstreamRunID: ID("a", at)},
		{RunID: IdempotentID("a", "2026-11-22T03:00:01Z"), Job: "a", Attempt: 1, Trigger: Manual, ScheduledAt: at, Slot: 1, Outcome: Succeeded},
		// Not a time this version writes, but kept as it was.
		{RunID: ID("a", at), Job: "a", Attempt: 1, Trigger: Schedule, ScheduledAt: at.In(berlin), Slot: 1, Outcome: Succeeded},
		{RunID: "odd", Job: "other", Attempt: 0, Trigger: "", Slot: 0, Outcome: Succeeded},
	} {
		full, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		stored := EncodeRecord(&r)
		for _, value := range []string{stored, string(full)} {
			back, err := DecodeRecord([]byte(value))
			if err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(&back)
			if r.RunID == "odd" {
				// Attempt and trigger were never empty in a record; empty
				// ones read back as the defaults.
				r.Attempt, r.Trigger = 1, Schedule
				full, _ = json.Marshal(&r)
			}
			if string(again) != string(full) {
				t.Errorf("%s reads back as\n %s\nnot\n %s", value, again, full)
			}
		}
		if len(stored) > len(full) {
			t.Errorf("stored %d bytes, more than in full (%d): %s", len(stored), len(full), stored)
		}
	}
}

// What a scheduled run's id says is not stored again.
func TestStoredRecordLeavesOutWhatTheRunIDSays(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 0, 1, 5, time.UTC)
	r := Record{RunID: ID("nightly", at), Job: "nightly", Attempt: 1, Trigger: Schedule, ScheduledAt: at, Slot: 0, Outcome: Succeeded}
	got := EncodeRecord(&r)
	if want := `{"run_id":"nightly@2026-11-22T03:00:01.000000005Z","outcome":"succeeded"}`; got != want {
		t.Errorf("stored %s, want %s", got, want)
	}
	for _, id := range []string{"x", "x@", "x@manual-1", "x@2026-11-22T03:00:01.000Z", "x@2026-11-22T04:00:01+01:00"} {
		if at, ok := ScheduledAtOf(id); ok {
			t.Errorf("ScheduledAtOf(%q) = %s: not a scheduled run's id", id, at)
		}
	}
	if !strings.Contains(EncodeRecord(&Record{RunID: "x@manual-1", Job: "x", ScheduledAt: at}), `"scheduled_at"`) {
		t.Error("a manual run's scheduled_at was left out")
	}
}

// The stored form is written by hand for the records runs end with (no
// input, no earlier attempts): byte for byte what encoding/json writes
// for it, every field set and unset in turn.
func TestEncodeRecordWritesWhatEncodingJSONWrites(t *testing.T) {
	at := time.Date(2026, 11, 30, 4, 0, 1, 0, time.UTC)
	code, zero := 3, 0
	full := Record{RunID: ChainID("b", ID("a", at)), Job: "b", Team: "t<1>", Attempt: 2, Trigger: Chain,
		ScheduledAt: at.Add(time.Millisecond), StartedAt: at.Add(2), EndedAt: at.Add(time.Second), Holder: "r1",
		Slot: 3, FencingToken: 77, Outcome: Failed, ExitCode: &code, HTTPStatus: 502, Error: "bad \"gateway\"\n",
		Output: "é & more", UpstreamRunID: ID("a", at), ConcurrencyKey: "k"}
	records := []Record{full, {RunID: ID("a", at), Job: "a", Attempt: 1, Trigger: Schedule, ScheduledAt: at, Outcome: Succeeded, ExitCode: &zero}}
	// Each field left at its zero value in turn.
	for i := range 20 {
		r := full
		switch i {
		case 0:
			r.Team = ""
		case 1:
			r.StartedAt = time.Time{}
		case 2:
			r.EndedAt = time.Time{}
		case 3:
			r.Holder = ""
		case 4:
			r.FencingToken = 0
		case 5:
			r.ExitCode = nil
		case 6:
			r.HTTPStatus = 0
		case 7:
			r.Error, r.Output = "", ""
		case 8:
			r.UpstreamRunID, r.ConcurrencyKey = "", ""
		case 9:
			r.Slot, r.Attempt = 0, 1
		case 10:
			r.Slot = -1
		case 11:
			r.Trigger = Schedule
		}
		records = append(records, r)
	}
	for _, r := range records {
		s := storedOf(&r)
		want, err := json.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.appendTo(nil); string(got) != string(want) {
			t.Errorf("appendTo:\n %s\nencoding/json:\n %s", got, want)
		}
	}
}
