package main

import "testing"

// A run's share: the log per member (each writes every entry), the
// client traffic summed over the members.
func TestWireOfSharesTheDeltasOverRuns(t *testing.T) {
	d := map[string]float64{walBytes: 3 * 4000, raftEntries: 3 * 2, clientBytesIn: 2000, clientBytesOut: 5000, grpcMsgsIn: 30, grpcMsgsOut: 60,
		peerBytesOut: 9000, txnCalls: 20, rangeCalls: 4, watchMsgsOut: 50, keepAlivesIn: 3}
	got := wireOf(d, 3, 10)
	want := wireCost{WALBytes: 400, RaftEntries: 0.2, ClientBytesIn: 200, ClientBytesOut: 500, MsgsIn: 3, MsgsOut: 6,
		PeerBytesOut: 900, Txns: 2, Ranges: 0.4, WatchMsgs: 5, KeepAlives: 0.3}
	if got == nil || *got != want {
		t.Fatalf("wireOf = %+v, want %+v", got, want)
	}
	if wireOf(d, 3, 0) != nil || (*wireCost)(nil).String() != "not measured" {
		t.Fatal("no run: want nil, printed as not measured")
	}
}
