package txnbatch

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// A footprint is what decides whether a transaction may share a commit with
// another: the keys it writes and the keys its compares read, its cost
// against the server's --max-txn-ops and its size.
//
// Two members conflict when one writes a key the other writes or compares.
// Without such a conflict the batch is exactly the members run one after the
// other in batch order: etcd evaluates every compare of the batch before any
// write (compareToPath in etcdserver/txn), so a member's compares read the
// state before the batch, and since no earlier member wrote those keys that
// is the state it would read after them; its gets and writes run in order.
// Gets are therefore not part of the footprint: they see the writes of the
// members before them, as they would one after the other.
//
// The server refuses a whole transaction when nested transactions put the
// same key, or put a key another deletes (checkIntervals in
// etcdserver/api/v3rpc/key.go): the write-write rule keeps those apart.
type footprint struct {
	writes []span
	reads  []span
	cost   int // the widths along the widest path (checkTxnRequest)
	size   int // estimated bytes on the wire
}

// span is one key (end == "") or the range [key, end); end "\x00" is every
// key from key on, as etcd reads it.
type span struct{ key, end string }

func (s span) last() (string, bool) {
	if s.end == "" {
		return s.key + "\x00", true
	}
	return s.end, s.end != "\x00"
}

// isDir reports whether s is a directory: every key under a prefix that
// ends in '/', [d, d with its '/' made '0'), as clientv3's WithPrefix reads.
func (s span) isDir() bool {
	n := len(s.key)
	return n > 0 && s.key[n-1] == '/' && len(s.end) == n && s.end[n-1] == '0' && s.end[:n-1] == s.key[:n-1]
}

func (a span) overlaps(b span) bool {
	if a.end == "" && b.end == "" {
		return a.key == b.key
	}
	aEnd, aBounded := a.last()
	bEnd, bBounded := b.last()
	return (!aBounded || b.key < aEnd) && (!bBounded || a.key < bEnd)
}

// Per-item overhead of the protobuf encoding, roughly: tags, lengths,
// the lease and the compare's target.
const (
	opOverhead  = 16
	txnOverhead = 8
)

func footprintOf(req *pb.TxnRequest) footprint {
	var f footprint
	r, w := spans(req)
	f.reads, f.writes = make([]span, 0, r), make([]span, 0, w)
	f.cost = f.add(req)
	return f
}

// spans counts the reads and writes add appends, so a footprint is
// allocated once (growing its lists was 3% of a replica at 2,000 runs/s).
func spans(req *pb.TxnRequest) (reads, writes int) {
	reads = len(req.Compare)
	for _, ops := range [][]*pb.RequestOp{req.Success, req.Failure} {
		for _, op := range ops {
			switch r := op.Request.(type) {
			case *pb.RequestOp_RequestTxn:
				nr, nw := spans(r.RequestTxn)
				reads, writes = reads+nr, writes+nw
			case *pb.RequestOp_RequestPut, *pb.RequestOp_RequestDeleteRange:
				writes++
			}
		}
	}
	return reads, writes
}

// add walks one transaction level and returns its cost: its own width
// (compares, then or else, whichever is longest) plus the dearest nested
// transaction's. The server checks each level against what the levels
// above it left (checkTxnRequest), so costs add along a path, not across
// siblings.
func (f *footprint) add(req *pb.TxnRequest) int {
	f.size += txnOverhead
	for _, c := range req.Compare {
		f.reads = append(f.reads, span{string(c.Key), string(c.RangeEnd)})
		f.size += opOverhead + len(c.Key) + len(c.RangeEnd) + len(c.GetValue())
	}
	nested := 0
	for _, ops := range [][]*pb.RequestOp{req.Success, req.Failure} {
		for _, op := range ops {
			f.size += opOverhead
			switch r := op.Request.(type) {
			case *pb.RequestOp_RequestTxn:
				nested = max(nested, f.add(r.RequestTxn))
			case *pb.RequestOp_RequestPut:
				f.size += len(r.RequestPut.Key) + len(r.RequestPut.Value)
				f.writes = append(f.writes, span{key: string(r.RequestPut.Key)})
			case *pb.RequestOp_RequestDeleteRange:
				d := r.RequestDeleteRange
				f.size += len(d.Key) + len(d.RangeEnd)
				f.writes = append(f.writes, span{string(d.Key), string(d.RangeEnd)})
			case *pb.RequestOp_RequestRange:
				f.size += len(r.RequestRange.Key) + len(r.RequestRange.RangeEnd)
			}
		}
	}
	return max(len(req.Compare), len(req.Success), len(req.Failure)) + nested
}
