package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

func failedRecord() *runs.Record {
	return &runs.Record{RunID: "report@2026-11-22T01:00:00Z", Job: "report", Attempt: 2, Outcome: runs.Failed,
		HTTPStatus: 500, Error: "target answered 500"}
}

// The json body is the record with the event and the id beside its fields;
// the slack body is one line of text.
func TestBodies(t *testing.T) {
	n := New("ops", "failed", failedRecord(), time.Date(2026, 11, 22, 1, 0, 1, 0, time.UTC))
	if n.ID != "report@2026-11-22T01:00:00Z#2:failed" {
		t.Errorf("id %q", n.ID)
	}
	b, err := Body(config.FormatJSON, n)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["notification_id"] != n.ID || got["event"] != "failed" || got["run_id"] != n.Record.RunID || got["outcome"] != "failed" {
		t.Errorf("json body %s", b)
	}
	b, err = Body(config.FormatSlack, n)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"text":"report: run report@2026-11-22T01:00:00Z failed (attempt 2): target answered 500"}`
	if string(b) != want {
		t.Errorf("slack body %s, want %s", b, want)
	}
}

// Post sends the sink's headers and the id; its errors name neither the
// URL nor a header value.
func TestPostKeepsSecretsOutOfErrors(t *testing.T) {
	var gotAuth, gotID string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotID = r.Header.Get("Authorization"), r.Header.Get(HeaderID)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	sink := &config.Sink{Name: "ops", URL: srv.URL + "/hook?token=s3cret-url", Format: config.FormatJSON,
		Headers: map[string]string{"Authorization": "Bearer s3cret-header", HeaderID: "forged"}}
	n := New("ops", "failed", failedRecord(), time.Now())
	s := NewSender(time.Second)
	err := s.Post(context.Background(), sink, n)
	if err == nil || gotAuth != "Bearer s3cret-header" || gotID != n.ID {
		t.Fatalf("post: err %v, Authorization %q, id %q", err, gotAuth, gotID)
	}
	srv.Close()
	err2 := s.Post(context.Background(), sink, n)
	for _, e := range []error{err, err2} {
		if e == nil || strings.Contains(e.Error(), "s3cret") {
			t.Errorf("error %v: want one without secrets", e)
		}
	}
}
