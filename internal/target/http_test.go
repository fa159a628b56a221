package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

func httpJob(url string, codes ...string) *config.Job {
	return &config.Job{
		Name:    "nightly-report",
		Timeout: config.Duration(20 * time.Second),
		HTTP:    &config.HTTP{Method: http.MethodGet, URL: url, SuccessCodes: codes},
	}
}

// server starts a real HTTP server on 127.0.0.1 and counts the connections
// it accepts, which is how connection reuse is observed.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func TestHTTPSendsRequestAndSchedulerHeaders(t *testing.T) {
	var (
		mu     sync.Mutex
		got    *http.Request
		gotBdy string
	)
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, gotBdy = r.Clone(context.Background()), string(b)
		mu.Unlock()
		io.WriteString(w, "report queued")
	})
	job := httpJob(srv.URL + "/hooks/report")
	job.HTTP.Method = http.MethodPost
	job.HTTP.Body = `{"kind":"nightly"}`
	job.HTTP.Headers = map[string]string{
		"X-Team":                    "data",
		"X-Scheduler-Job":           "evil",
		"x-scheduler-fencing-token": "999999999",
	}

	res := testExecutor(t).Execute(t.Context(), job, testRun())

	if res.Outcome != runs.Succeeded || res.HTTPStatus != 200 || res.Error != "" {
		t.Fatalf("result = %+v, want succeeded 200", res)
	}
	if res.Output != "report queued" {
		t.Errorf("output = %q, want the response body", res.Output)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Method != http.MethodPost || got.URL.Path != "/hooks/report" || gotBdy != `{"kind":"nightly"}` {
		t.Errorf("target saw %s %s %q", got.Method, got.URL.Path, gotBdy)
	}
	if v := got.Header.Get("X-Team"); v != "data" {
		t.Errorf("X-Team = %q, want data", v)
	}
	for name, want := range map[string]string{
		"X-Scheduler-Job":           wantFields["JOB"],
		"X-Scheduler-Run-Id":        wantFields["RUN_ID"],
		"X-Scheduler-Attempt":       wantFields["ATTEMPT"],
		"X-Scheduler-Scheduled-At":  wantFields["SCHEDULED_AT"],
		"X-Scheduler-Slot":          wantFields["SLOT"],
		"X-Scheduler-Fencing-Token": wantFields["FENCING_TOKEN"],
		"X-Scheduler-Holder":        wantFields["HOLDER"],
	} {
		// Values, not just Get: a job header must not sit beside ours.
		if v := got.Header.Values(name); len(v) != 1 || v[0] != want {
			t.Errorf("%s = %q, want [%q]", name, v, want)
		}
	}
}

func TestHTTPSuccessCodesDecideOutcome(t *testing.T) {
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/?status=200", http.StatusFound)
			return
		}
		s, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.WriteHeader(s)
	})
	tests := []struct {
		name   string
		path   string
		codes  []string
		follow bool
		want   runs.Outcome
		status int
	}{
		{"default 2xx accepts 204", "/?status=204", nil, false, runs.Succeeded, 204},
		{"default 2xx rejects 404", "/?status=404", nil, false, runs.Failed, 404},
		{"exact code", "/?status=202", []string{"202"}, false, runs.Succeeded, 202},
		{"exact code rejects neighbour", "/?status=201", []string{"202"}, false, runs.Failed, 201},
		{"class and code", "/?status=404", []string{"2xx", "404"}, false, runs.Succeeded, 404},
		{"5xx fails under 2xx", "/?status=503", []string{"2xx"}, false, runs.Failed, 503},
		{"redirect not followed", "/redirect", nil, false, runs.Failed, 302},
		{"redirect accepted as 3xx", "/redirect", []string{"3xx"}, false, runs.Succeeded, 302},
		{"redirect followed", "/redirect", nil, true, runs.Succeeded, 200},
	}
	e := testExecutor(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := httpJob(srv.URL+tt.path, tt.codes...)
			job.HTTP.FollowRedirects = tt.follow
			res := e.Execute(t.Context(), job, testRun())
			if res.Outcome != tt.want || res.HTTPStatus != tt.status {
				t.Fatalf("result = %+v, want %s with status %d", res, tt.want, tt.status)
			}
			if (res.Outcome == runs.Failed) != strings.Contains(res.Error, strconv.Itoa(tt.status)) {
				t.Errorf("error %q should name the status only when failed", res.Error)
			}
		})
	}
}

func TestHTTPMalformedSuccessCodeSendsNothing(t *testing.T) {
	srv, conns := server(t, func(http.ResponseWriter, *http.Request) {})
	res := testExecutor(t).Execute(t.Context(), httpJob(srv.URL, "2x"), testRun())
	if res.Outcome != runs.Failed || !strings.Contains(res.Error, `"2x"`) {
		t.Fatalf("result = %+v, want failed naming the code", res)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("target got %d connections, want none", n)
	}
}

// TestHTTPAttemptsReportedSeparately: a 500 then a 200, as two attempts of
// one run, are two results, and the target can tell the attempts apart.
func TestHTTPAttemptsReportedSeparately(t *testing.T) {
	var (
		mu       sync.Mutex
		attempts []string
	)
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts = append(attempts, r.Header.Get("X-Scheduler-Attempt"))
		first := len(attempts) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "database down")
			return
		}
		io.WriteString(w, "ok")
	})
	e := testExecutor(t)
	run := testRun()

	run.Attempt = 1
	first := e.Execute(t.Context(), httpJob(srv.URL), run)
	run.Attempt = 2
	second := e.Execute(t.Context(), httpJob(srv.URL), run)

	if first.Outcome != runs.Failed || first.HTTPStatus != 500 || first.Output != "database down" ||
		!strings.Contains(first.Error, "500") {
		t.Errorf("attempt 1 = %+v, want failed 500 with the body", first)
	}
	if second.Outcome != runs.Succeeded || second.HTTPStatus != 200 || second.Error != "" {
		t.Errorf("attempt 2 = %+v, want succeeded 200", second)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(attempts, ",") != "1,2" {
		t.Errorf("target saw attempts %q, want 1 then 2", attempts)
	}
}

func TestHTTPHangingTargetTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	job := httpJob(srv.URL)
	job.Timeout = config.Duration(200 * time.Millisecond)

	start := time.Now()
	res := testExecutor(t).Execute(t.Context(), job, testRun())
	took := time.Since(start)

	if res.Outcome != runs.TimedOut || !strings.Contains(res.Error, "timed out after 200ms") {
		t.Fatalf("result = %+v, want timed_out", res)
	}
	if took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("run took %v, want it to end at its 200ms timeout", took)
	}
}

func TestHTTPCancelledCarriesCause(t *testing.T) {
	arrived := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() {
		<-arrived
		cancel(errors.New("lease about to expire"))
	}()

	res := testExecutor(t).Execute(ctx, httpJob(srv.URL), testRun())

	if res.Outcome != runs.Cancelled || !strings.Contains(res.Error, "lease about to expire") {
		t.Fatalf("result = %+v, want cancelled with the cause", res)
	}
}

func TestHTTPClosedPortFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	res := testExecutor(t).Execute(t.Context(), httpJob("http://"+addr+"/"), testRun())

	if res.Outcome != runs.Failed || res.HTTPStatus != 0 ||
		!strings.Contains(res.Error, "connection refused") || !strings.Contains(res.Error, addr) {
		t.Fatalf("result = %+v, want failed with connection refused to %s", res, addr)
	}
}

// TestHTTPReusesConnectionAndKeepsBodyTail: bodies larger than the tail are
// read to the end, so one connection serves every run, and only the last
// 4 KiB are kept.
func TestHTTPReusesConnectionAndKeepsBodyTail(t *testing.T) {
	const size = 1 << 20
	srv, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = pattern(i)
		}
		w.Write(buf)
	})
	e := testExecutor(t)
	want := string(patternTail(size, runs.OutputLimit))
	for i := range 3 {
		res := e.Execute(t.Context(), httpJob(srv.URL), testRun())
		if res.Outcome != runs.Succeeded || res.Output != want {
			t.Fatalf("run %d: outcome %s, output of %d bytes, want succeeded with the body's last %d bytes",
				i, res.Outcome, len(res.Output), runs.OutputLimit)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("target accepted %d connections for 3 runs, want 1", n)
	}
}

// A busy job keeps its connections: 256 runs at once to one host (a
// worker's max_parallel in the bench), then 256 again, dial 256 times and
// then hardly at all (a connection goes back to the pool just after its
// run returns, so a run of the second wave may find it not back yet), not
// again for each the idle pool let go.
func TestHTTPKeepsAConnectionPerRunAtOnce(t *testing.T) {
	const wide = 256
	var inFlight sync.WaitGroup
	inFlight.Add(wide)
	release := make(chan struct{})
	srv, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("wave") == "1" {
			inFlight.Done()
			<-release // the first wave holds every connection at once
		}
	})
	e := testExecutor(t)
	for wave := 1; wave <= 2; wave++ {
		var g errgroup.Group
		for range wide {
			g.Go(func() error {
				if res := e.Execute(t.Context(), httpJob(fmt.Sprintf("%s/?wave=%d", srv.URL, wave)), testRun()); res.Outcome != runs.Succeeded {
					return fmt.Errorf("wave %d: outcome %s: %s", wave, res.Outcome, res.Output)
				}
				return nil
			})
		}
		if wave == 1 {
			inFlight.Wait()
			close(release)
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n > wide+wide/8 {
		t.Errorf("target accepted %d connections for two waves of %d runs at once, want at most %d (the second wave reuses the first's)", n, wide, wide+wide/8)
	}
}
