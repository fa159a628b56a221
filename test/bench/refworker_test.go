package main

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// A reference process calls its target over kept connections, as the
// peer's shared keep-alive client does: the witness answers with a body,
// and a body closed unread closed its connection, so every trigger dialed
// afresh (a third of the process's CPU, and the reference's lateness
// tripled).
func TestRefCallsReuseTheirConnection(t *testing.T) {
	w, err := cluster.StartWitness(cluster.WitnessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	hc := newRefClient(4)
	defer hc.CloseIdleConnections()
	var dials atomic.Int32
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused {
				dials.Add(1)
			}
		},
	})
	j := &refJob{name: "j"}
	const calls = 20
	first := time.Now().Truncate(time.Second)
	for i := range calls {
		j.call(ctx, hc, w.URL(""), first.Add(time.Duration(i)*time.Second))
	}
	if got := len(w.Runs()); got != calls {
		t.Fatalf("the witness saw %d calls, want %d", got, calls)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d calls one after another dialed %d connections, want 1 kept for all", calls, n)
	}
}
