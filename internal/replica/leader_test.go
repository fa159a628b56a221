package replica

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/api"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/session"
)

// GET /api/v1/leader answers 503 while nobody leads, read from etcd rather
// than assumed: here the replica's elector exists but does not campaign.
func TestLeaderEndpointWithoutLeader(t *testing.T) {
	etcd := etcdtest.Start(t)
	cli := etcd.Client()
	sessions, err := session.NewManager(cli, session.Options{TTL: 2 * time.Second, Margin: 500 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	el, err := election.New(cli, sessions, election.Config{Prefix: "/noleader/", ID: "idle", APIAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	// A live session: the replica's view is confirmed, and nobody leads.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = sessions.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	poll.For(t, 30*time.Second, "a session", sessions.Alive)
	srv.SetCluster(cluster{elector: el, sessions: sessions})
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/leader", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"no_leader"`) {
		t.Fatalf("GET /api/v1/leader with no leader: %d %s", rec.Code, rec.Body)
	}
}
