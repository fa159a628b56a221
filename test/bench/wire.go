package main

import "fmt"

// What etcd moves for a run besides its index operations: what its
// members write to their logs, and what their clients send and receive.
// Two sides with the same operations a run can cost etcd apart by these
// (larger values, more requests, more watch events: each a message).
const (
	walBytes = "etcd_disk_wal_write_bytes_total"
	// raftEntries: the entries a member's log committed, one per write
	// request whether or not its compares held (a revision counts only
	// those that wrote), and per lease grant or revoke.
	raftEntries = "etcd_server_proposals_committed_total"
	// The members' gRPC with their clients: bytes each way, and messages
	// each way (a unary call is one each; a watch or keep-alive stream
	// one per request and per response).
	clientBytesIn  = "etcd_network_client_grpc_received_bytes_total"
	clientBytesOut = "etcd_network_client_grpc_sent_bytes_total"
	grpcMsgsIn     = "grpc_server_msg_received_total"
	grpcMsgsOut    = "grpc_server_msg_sent_total"
	// Where the members' work beside the operations goes: the raft
	// traffic among them (appends, heartbeats, read indexes), and the
	// client requests by kind (a read-only transaction or a range is a
	// linearizable read: a read index, a heartbeat round of the leader).
	peerBytesOut = "etcd_network_peer_sent_bytes_total"
	txnCalls     = `grpc_server_handled_total{grpc_method="Txn"}`
	rangeCalls   = `grpc_server_handled_total{grpc_method="Range"}`
	watchMsgsOut = `grpc_server_msg_sent_total{grpc_method="Watch"}`
	keepAlivesIn = `grpc_server_msg_received_total{grpc_method="LeaseKeepAlive"}`
)

// wireNames are the counters wireOf reads, scraped from every member.
var wireNames = []string{walBytes, raftEntries, clientBytesIn, clientBytesOut, grpcMsgsIn, grpcMsgsOut,
	peerBytesOut, txnCalls, rangeCalls, watchMsgsOut, keepAlivesIn}

// wireCost is a run's share of them: the log a member writes (every
// member writes every entry), and the client traffic of all members.
type wireCost struct {
	WALBytes       float64 `json:"wal_bytes_per_member"`
	RaftEntries    float64 `json:"raft_entries"`
	ClientBytesIn  float64 `json:"client_bytes_in"`
	ClientBytesOut float64 `json:"client_bytes_out"`
	MsgsIn         float64 `json:"grpc_msgs_in"`
	MsgsOut        float64 `json:"grpc_msgs_out"`
	PeerBytesOut   float64 `json:"peer_bytes_out"`
	Txns           float64 `json:"txn_calls"`
	Ranges         float64 `json:"range_calls"`
	WatchMsgs      float64 `json:"watch_msgs_out"`
	KeepAlives     float64 `json:"keepalives_in"`
}

// wireOf is the run's share of the counters' deltas d over runs, with
// members members; nil with no run.
func wireOf(d map[string]float64, members int, runs float64) *wireCost {
	if runs <= 0 || members <= 0 {
		return nil
	}
	return &wireCost{
		WALBytes:      d[walBytes] / float64(members) / runs,
		RaftEntries:   d[raftEntries] / float64(members) / runs,
		ClientBytesIn: d[clientBytesIn] / runs, ClientBytesOut: d[clientBytesOut] / runs,
		MsgsIn: d[grpcMsgsIn] / runs, MsgsOut: d[grpcMsgsOut] / runs,
		PeerBytesOut: d[peerBytesOut] / runs, Txns: d[txnCalls] / runs, Ranges: d[rangeCalls] / runs,
		WatchMsgs: d[watchMsgsOut] / runs, KeepAlives: d[keepAlivesIn] / runs,
	}
}

// String is the figures for the progress log.
func (w *wireCost) String() string {
	if w == nil {
		return "not measured"
	}
	return fmt.Sprintf("%.3f raft entries, WAL %.0f B a member, clients' %.0f B in / %.0f B out, %.2f / %.2f gRPC messages (%.3f Txn, %.3f Range, %.3f Watch out, %.3f keep-alives), %.0f B among the members",
		w.RaftEntries, w.WALBytes, w.ClientBytesIn, w.ClientBytesOut, w.MsgsIn, w.MsgsOut, w.Txns, w.Ranges, w.WatchMsgs, w.KeepAlives, w.PeerBytesOut)
}
