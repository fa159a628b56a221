package client

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// With several servers, one that does not answer is skipped, for a POST
// too when the connection was never made, and the one that answered is
// asked first from then on. A POST that reached a server that then did not
// answer is not sent again: it may have been done.
func TestSeveralServers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(`{"run_id":"echo@manual-1"}`))
	}))
	defer up.Close()
	c, err := New(down + ", " + up.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if c.Server() != down {
		t.Errorf("asks %s first, want %s", c.Server(), down)
	}
	tr, err := c.Trigger(t.Context(), "echo", nil, "")
	if err != nil || tr.RunID != "echo@manual-1" || hits.Load() != 1 {
		t.Fatalf("Trigger past a closed port: %+v %v (%d hits)", tr, err, hits.Load())
	}
	if c.Server() != up.URL {
		t.Errorf("asks %s first after it answered, want %s", c.Server(), up.URL)
	}

	// A server that takes the request and never answers.
	var slowHits atomic.Int32
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowHits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	c2, err := New(slow.URL+","+up.URL, WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.CloseIdleConnections()
	if _, err := c2.Trigger(t.Context(), "echo", nil, ""); err == nil || hits.Load() != 1 {
		t.Errorf("a POST that timed out was sent again: %v (%d hits)", err, hits.Load())
	}
	if _, err := c2.Status(t.Context()); err != nil || slowHits.Load() != 2 || hits.Load() != 2 {
		t.Errorf("a GET that timed out was not asked of the next: %v (%d, %d hits)", err, slowHits.Load(), hits.Load())
	}
}
