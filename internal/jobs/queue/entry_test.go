package queue

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Retries back off exponentially from the moment the attempt ended, capped
// at max_backoff, and stop after retries.max; each keeps the run id and
// carries the attempts before it.
func TestRetryBackoff(t *testing.T) {
	ended := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	job := jobstest.WithDefaults(config.Job{Name: "r", Schedule: "@every 1m",
		Retries: config.Retries{Max: 4, Backoff: config.Duration(time.Second), MaxBackoff: config.Duration(5 * time.Second)}})
	e := NewEntry(runs.ID("r", ended), &job, nil, ended, ended, 1, runs.Schedule)
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}
	for i, d := range want {
		rec := e.Finished(runs.Failed, 0, 1, ended, ended)
		next := e.Retry(ended, &rec)
		if next == nil {
			t.Fatalf("attempt %d: no retry, want one after %s", e.Attempt, d)
		}
		if got := next.NotBefore.Sub(ended); got != d {
			t.Errorf("retry %d after %s, want %s", i+1, got, d)
		}
		if next.Attempt != e.Attempt+1 || next.RunID != e.RunID || next.Trigger != runs.Retry || next.State != Pending {
			t.Errorf("retry %d: %+v", i+1, next)
		}
		if len(next.Previous) != i+1 || next.Previous[i].Attempt != i+1 || next.Previous[i].Outcome != runs.Failed {
			t.Errorf("retry %d carries %+v", i+1, next.Previous)
		}
		e = next
	}
	rec := e.Finished(runs.Failed, 0, 1, ended, ended)
	if next := e.Retry(ended, &rec); next != nil {
		t.Errorf("attempt %d retried past retries.max 4", next.Attempt)
	}
}

// An entry decodes to what was encoded: a lean one, once its spec is
// resolved, to the entry that was made, whatever its trigger, attempt,
// state or run id; and specs that differ get refs that differ.
func TestEntryRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	a := jobstest.WithDefaults(config.Job{Name: "a", Schedule: "@every 1m", HTTP: &config.HTTP{Method: "POST", URL: "http://127.0.0.1:1/a",
		Headers: map[string]string{"X-Team": "one"}}, Resources: []string{"shared"}, Retries: config.Retries{Max: 2}})
	b := a
	b.HTTP = &config.HTTP{Method: "POST", URL: "http://127.0.0.1:1/a", Headers: map[string]string{"X-Team": "two"}}
	resources := []config.Resource{{Name: "shared", Limit: 2}}
	var entries []*Entry
	for i, job := range []*config.Job{&a, &a, &b, &a} {
		e := NewEntry(runs.ID(job.Name, at), job, resources, at, at.Add(time.Duration(i)*time.Millisecond), 1, runs.Schedule)
		e.Input = []byte(`{"n":1}`)
		entries = append(entries, e)
	}
	if entries[0].SpecRef != entries[1].SpecRef || entries[0].SpecRef == entries[2].SpecRef {
		t.Errorf("refs %s %s %s: want equal specs to share a ref and different ones not", entries[0].SpecRef, entries[1].SpecRef, entries[2].SpecRef)
	}
	manual := NewEntry(runs.ManualID("a", "01J"), &a, resources, at, at, 1, runs.Manual)
	retry := entries[0].Retry(at.Add(time.Minute), ptr(entries[0].Finished(runs.Failed, 1, 7, at, at)))
	second := *entries[3]
	second.Attempt, second.Trigger, second.CatchUp = 2, runs.Retry, true
	second.Previous = []runs.Attempt{{Attempt: 1, Outcome: runs.Lost, Holder: "r0", FencingToken: 3}}
	held := *entries[1]
	held.Hold = &Hold{Holder: "r1", Lease: 5, Slot: 1, Token: 9, Resources: []HeldResource{{Name: "shared", Index: 0}}}
	entries = append(entries, manual, retry, &second, &held,
		entries[0].Running("r1", 1, at), held.RunningHeld("r2", at.Add(time.Second)))
	for i, e := range entries {
		enc := e.Encode()
		got, err := Decode([]byte(enc))
		if err != nil {
			t.Fatal(err)
		}
		if got.Resolved() || got.SpecRef != e.SpecRef {
			t.Errorf("entry %d: decoded resolved %v with ref %q, want unresolved with %q", i, got.Resolved(), got.SpecRef, e.SpecRef)
		}
		value, _ := e.SpecOp(keys.New("/x/"))
		sp, err := decodeSpec(keys.New("/x/"), string(value.KeyBytes()), value.ValueBytes())
		if err != nil {
			t.Fatal(err)
		}
		got = got.withSpec(sp)
		want := *e
		if e.State == Running {
			want.NotBefore, want.CatchUp = time.Time{}, false // a running entry leaves them out
		}
		if g, w := stripWriter(got), stripWriter(&want); !reflect.DeepEqual(g, w) {
			t.Errorf("entry %d (%s):\n got  %+v\n want %+v", i, enc, g, w)
		}
		if got.Encode() != enc {
			t.Errorf("entry %d re-encodes as %s, was %s", i, got.Encode(), enc)
		}
	}
	if _, err := Decode([]byte(`{"run_id":"x","spec":{"max_concurrency":"two"}}`)); err == nil {
		t.Error("an entry whose spec does not decode was accepted")
	}
	if _, err := Decode([]byte(`{"run_id":"x@1","spec":""}`)); err == nil {
		t.Error("an entry with an empty spec ref was accepted")
	}
}

func ptr[T any](v T) *T { return &v }

// stripWriter is e without what only its writer has (the spec's stored
// value).
func stripWriter(e *Entry) *Entry {
	c := *e
	c.specValue = ""
	return &c
}

// An entry an older version wrote (its spec inline) decodes resolved, and
// keeps that form through the claim, a retry and a give-back: what this
// version writes back is what the older one would have written, so a
// replica of either version can run, release or reap it.
func TestInlineEntryKeepsItsForm(t *testing.T) {
	old := `{"run_id":"s1-00042@2026-11-22T03:00:01Z","job":"s1-00042","scheduled_at":"2026-11-22T03:00:01Z","not_before":"2026-11-22T03:00:01.345678912Z","attempt":1,"trigger":"schedule","spec":{"name":"s1-00042","schedule":"@every 1s","timezone":"UTC","jitter":"1s","max_concurrency":2,"overlap":"skip","queue_limit":1,"timeout":"10s","retries":{"max":1,"backoff":"1s","max_backoff":"1m0s"},"catch_up":"latest","starting_deadline":"30s","resources":["db"],"paused":false,"history_limit":100,"skipped_history_limit":20,"http":{"method":"POST","url":"http://127.0.0.1:41234/","success_codes":["2xx"]},"notify":null},"resources":[{"name":"db","limit":3}],"state":"pending"}`
	e, err := Decode([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if !e.Resolved() || e.SpecRef != "" || e.Spec.HTTP.URL != "http://127.0.0.1:41234/" || e.Spec.MaxConcurrency != 2 ||
		len(e.Resources) != 1 || e.Resources[0].Limit != 3 {
		t.Fatalf("decoded %+v", e)
	}
	if got := e.Encode(); got != old {
		t.Errorf("re-encoded:\n got  %s\n want %s", got, old)
	}
	at := time.Date(2026, 11, 22, 3, 0, 1, 345678912, time.UTC)
	running := e.Running("r1", 1, at)
	retry := running.Retry(at.Add(time.Second), ptr(running.Finished(runs.Failed, 1, 9, at, at)))
	for _, x := range []*Entry{running, retry} {
		// An older version decodes it (its Entry: the spec an object).
		var olds inline
		if err := json.Unmarshal([]byte(x.Encode()), &olds); err != nil || olds.Spec == nil || olds.Spec.HTTP == nil ||
			olds.Spec.HTTP.URL != "http://127.0.0.1:41234/" || olds.Job != "s1-00042" || olds.NotBefore.IsZero() || len(olds.Resources) != 1 {
			t.Errorf("an older version reads %s as %+v (%v)", x.Encode(), olds, err)
		}
	}
}

// A lean entry leaves out what its spec and its state already say: the
// resource limits (the spec's, once resolved) always, and once it runs
// what only a pending entry needs (not_before, catch_up).
func TestLeanEntryLeavesOutWhatItsSpecSays(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	job := jobstest.WithDefaults(jobstest.HTTPJob("j", "@every 1s", "http://127.0.0.1:1/"))
	job.Resources = []string{"db"}
	e := NewEntry(runs.ID("j", at), &job, []config.Resource{{Name: "db", Limit: 3}}, at, at.Add(time.Second), 1, runs.Schedule)
	e.CatchUp = true
	if len(e.Resources) != 1 {
		t.Fatalf("entry resources %+v, want db's limit", e.Resources)
	}
	pending, running := e.Encode(), e.Running("r1", 0, at).Encode()
	if strings.Contains(pending, `"resources"`) || strings.Contains(running, `"resources"`) {
		t.Errorf("a lean entry carries its resource limits:\n%s\n%s", pending, running)
	}
	if !strings.Contains(pending, `"catch_up":true`) || !strings.Contains(pending, `"not_before"`) {
		t.Errorf("the pending entry lost not_before or catch_up: %s", pending)
	}
	if strings.Contains(running, `"catch_up"`) || strings.Contains(running, `"not_before"`) {
		t.Errorf("the running entry carries what only a pending one needs: %s", running)
	}
}

// An older version cannot decode a lean entry (its spec is a string, not
// an object), so it ignores the entry instead of running it without a
// spec; and it decodes what this version writes back of an inline one.
func TestOlderVersionIgnoresLeanEntries(t *testing.T) {
	job := jobstest.WithDefaults(jobstest.HTTPJob("j", "@every 1s", "http://127.0.0.1:1/"))
	at := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	e := NewEntry(runs.ID("j", at), &job, nil, at, at, 1, runs.Schedule)
	for _, x := range []*Entry{e, e.Running("r1", 0, at)} {
		var olds inline
		if err := json.Unmarshal([]byte(x.Encode()), &olds); err == nil {
			t.Errorf("an older version decodes the lean entry %s", x.Encode())
		}
	}
}

// The bytes of a pending entry, a running entry and a record of the
// benchmark's job (test/bench: @every 1s, jitter 1s, max_concurrency 2,
// timeout 10s, starting_deadline 30s, an HTTP POST), written by an older
// version (the spec inline, the record in full) and by this one, as etcd
// stores them. The sizes are deterministic.
func TestEntryAndRecordBytes(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/bytes/")
	cfg := benchConfig(t)
	j := &cfg.Jobs[0]
	at := time.Date(2026, 11, 22, 3, 0, 1, 0, time.UTC)
	due := at.Add(345678912 * time.Nanosecond)
	pending := NewEntry(runs.ID(j.Name, at), j, cfg.Resources, at, due, 1, runs.Schedule)
	running := pending.Running("replica-2", 1, due)
	rec := running.Finished(runs.Succeeded, 1, 123456, due, due.Add(2*time.Millisecond))
	rec.HTTPStatus = 200
	inlinePending, inlineRunning := *pending, *running
	inlinePending.SpecRef, inlineRunning.SpecRef = "", ""
	full, err := json.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	specOp, _ := pending.SpecOp(k)

	for _, c := range []struct {
		name  string
		value string
		want  string
	}{
		{"pending entry before", inlinePending.Encode(), `{"run_id":"s1-00042@2026-11-22T03:00:01Z","job":"s1-00042","scheduled_at":"2026-11-22T03:00:01Z","not_before":"2026-11-22T03:00:01.345678912Z","attempt":1,"trigger":"schedule","spec":{"name":"s1-00042","schedule":"@every 1s","timezone":"UTC","jitter":"1s","max_concurrency":2,"overlap":"skip","queue_limit":1,"timeout":"10s","retries":{"max":0,"backoff":"1s","max_backoff":"1m0s"},"catch_up":"latest","starting_deadline":"30s","paused":false,"history_limit":100,"skipped_history_limit":20,"http":{"method":"POST","url":"http://127.0.0.1:41234/","success_codes":["2xx"]},"notify":null},"state":"pending"}`},
		{"running entry before", inlineRunning.Encode(), `{"run_id":"s1-00042@2026-11-22T03:00:01Z","job":"s1-00042","scheduled_at":"2026-11-22T03:00:01Z","not_before":"2026-11-22T03:00:01.345678912Z","attempt":1,"trigger":"schedule","spec":{"name":"s1-00042","schedule":"@every 1s","timezone":"UTC","jitter":"1s","max_concurrency":2,"overlap":"skip","queue_limit":1,"timeout":"10s","retries":{"max":0,"backoff":"1s","max_backoff":"1m0s"},"catch_up":"latest","starting_deadline":"30s","paused":false,"history_limit":100,"skipped_history_limit":20,"http":{"method":"POST","url":"http://127.0.0.1:41234/","success_codes":["2xx"]},"notify":null},"state":"running","holder":"replica-2","slot":1,"started_at":"2026-11-22T03:00:01.345678912Z"}`},
		{"record before", string(full), `{"run_id":"s1-00042@2026-11-22T03:00:01Z","job":"s1-00042","attempt":1,"trigger":"schedule","scheduled_at":"2026-11-22T03:00:01Z","started_at":"2026-11-22T03:00:01.345678912Z","ended_at":"2026-11-22T03:00:01.347678912Z","holder":"replica-2","slot":1,"fencing_token":123456,"outcome":"succeeded","http_status":200}`},
		{"pending entry after", pending.Encode(), `{"run_id":"s1-00042@2026-11-22T03:00:01Z","not_before":"2026-11-22T03:00:01.345678912Z","spec":"` + pending.SpecRef + `","state":"pending"}`},
		{"running entry after", running.Encode(), `{"run_id":"s1-00042@2026-11-22T03:00:01Z","spec":"` + pending.SpecRef + `","state":"running","holder":"replica-2","slot":1,"started_at":"2026-11-22T03:00:01.345678912Z"}`},
		{"record after", EncodeRecord(&rec), `{"run_id":"s1-00042@2026-11-22T03:00:01Z","started_at":"2026-11-22T03:00:01.345678912Z","ended_at":"2026-11-22T03:00:01.347678912Z","holder":"replica-2","fencing_token":123456,"outcome":"succeeded","http_status":200,"slot":1}`},
		{"spec, once per version", string(specOp.ValueBytes()), `{"job":{"name":"s1-00042","schedule":"@every 1s","timezone":"UTC","jitter":"1s","max_concurrency":2,"overlap":"skip","queue_limit":1,"timeout":"10s","retries":{"max":0,"backoff":"1s","max_backoff":"1m0s"},"catch_up":"latest","starting_deadline":"30s","paused":false,"history_limit":100,"skipped_history_limit":20,"http":{"method":"POST","url":"http://127.0.0.1:41234/","success_codes":["2xx"]},"notify":null}}`},
	} {
		if c.value != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.name, c.value, c.want)
		}
		key := "/bytes/" + strings.ReplaceAll(c.name, " ", "-")
		if _, err := cli.Put(t.Context(), key, c.value); err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-24s %4d bytes", c.name, len(resp.Kvs[0].Value))
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"pending entry before", len(inlinePending.Encode()), 603},
		{"running entry before", len(inlineRunning.Encode()), 679},
		{"record before", len(full), 313},
		{"pending entry after", len(pending.Encode()), 136},
		{"running entry after", len(running.Encode()), 166},
		{"record after", len(EncodeRecord(&rec)), 225},
		{"spec", len(specOp.ValueBytes()), 409},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, c.got, c.want)
		}
	}
	back, err := runs.DecodeRecord([]byte(EncodeRecord(&rec)))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(&back); string(again) != string(full) {
		t.Errorf("the stored record reads back as\n %s\nnot\n %s", again, full)
	}
}

// benchConfig is the job the byte counts and the entry-life bench measure:
// one as the bench's generator writes it, through the loader's defaults.
func benchConfig(tb testing.TB) *config.Config {
	tb.Helper()
	cfg, err := config.Parse("bench.yaml", []byte(`jobs:
  - name: s1-00042
    schedule: "@every 1s"
    jitter: 1s
    max_concurrency: 2
    timeout: 10s
    starting_deadline: 30s
    http: {method: POST, url: "http://127.0.0.1:41234/"}
`))
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// A retry claimed afresh runs on its own slot, whose token is the claim's
// revision: its entry names no kept slot's token, or the leader's reaper,
// comparing the slot with Item.Token, would take it for lost while it
// runs. Only a claim with the kept slot names its token.
func TestARetryClaimedAfreshNamesNoKeptToken(t *testing.T) {
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	job := jobstest.WithDefaults(jobstest.HTTPJob("j", "@manually", "http://127.0.0.1:1/"))
	e := NewEntry(runs.ID("j", at), &job, nil, at, at, 2, runs.Retry)
	e.Hold = &Hold{Holder: "gone", Lease: 5, Slot: 1, Token: 9}
	fresh := &Item{Key: "/q/j", Entry: e.Running("r2", 0, at), ModRev: 40}
	if fresh.HeldToken != 0 || fresh.Hold != nil || fresh.Token() != 40 {
		t.Errorf("claimed afresh: held token %d, hold %v, token %d; want the claim's revision 40", fresh.HeldToken, fresh.Hold, fresh.Token())
	}
	kept := &Item{Key: "/q/j", Entry: e.RunningHeld("gone", at), ModRev: 41}
	if kept.Slot != 1 || kept.Token() != 9 {
		t.Errorf("claimed with the kept slot: slot %d, token %d; want slot 1, token 9", kept.Slot, kept.Token())
	}
}
