package txnbatch

import (
	clientv3 "go.etcd.io/etcd/client/v3"
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

func footprintOf(t Txn) footprint {
	var f footprint
	r, w := spans(t.If, t.Then, nil)
	f.reads, f.writes = make([]span, 0, r), make([]span, 0, w)
	f.cost = f.add(t.If, t.Then, nil)
	return f
}

// spans counts the reads and writes add appends, so a footprint is
// allocated once (growing its lists was 3% of a replica at 2,000 runs/s).
func spans(cmps []clientv3.Cmp, then, els []clientv3.Op) (reads, writes int) {
	reads = len(cmps)
	for _, ops := range [][]clientv3.Op{then, els} {
		for _, op := range ops {
			switch {
			case op.IsTxn():
				c, t, e := op.Txn()
				r, w := spans(c, t, e)
				reads, writes = reads+r, writes+w
			case op.IsPut(), op.IsDelete():
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
func (f *footprint) add(cmps []clientv3.Cmp, then, els []clientv3.Op) int {
	f.size += txnOverhead
	for _, c := range cmps {
		pc := c.GetCompare()
		f.reads = append(f.reads, span{string(pc.Key), string(pc.RangeEnd)})
		f.size += opOverhead + len(pc.Key) + len(pc.RangeEnd) + len(pc.GetValue())
	}
	nested := 0
	for _, ops := range [][]clientv3.Op{then, els} {
		for _, op := range ops {
			f.size += opOverhead + len(op.KeyBytes()) + len(op.RangeBytes()) + len(op.ValueBytes())
			switch {
			case op.IsTxn():
				c, t, e := op.Txn()
				nested = max(nested, f.add(c, t, e))
			case op.IsPut(), op.IsDelete():
				f.writes = append(f.writes, span{string(op.KeyBytes()), string(op.RangeBytes())})
			}
		}
	}
	return max(len(cmps), len(then), len(els)) + nested
}

// keyset is the union of footprints already in a batch (or waiting before
// a member), indexed so a member is checked in time linear in its own keys.
type keyset struct {
	points map[string]access
	ranges []ranged
}

type access uint8

const (
	read access = 1 << iota
	write
)

type ranged struct {
	span
	access
}

func (s *keyset) reset() {
	clear(s.points)
	s.ranges = s.ranges[:0]
}

func (s *keyset) add(f *footprint) {
	if s.points == nil {
		s.points = map[string]access{}
	}
	for _, sp := range f.writes {
		s.put(sp, write)
	}
	for _, sp := range f.reads {
		s.put(sp, read)
	}
}

func (s *keyset) put(sp span, a access) {
	if sp.end == "" {
		s.points[sp.key] |= a
		return
	}
	s.ranges = append(s.ranges, ranged{sp, a})
}

// conflicts reports whether f writes what the set reads or writes, or reads
// what the set writes.
func (s *keyset) conflicts(f *footprint) bool {
	for _, sp := range f.writes {
		if s.touches(sp, read|write) {
			return true
		}
	}
	for _, sp := range f.reads {
		if s.touches(sp, write) {
			return true
		}
	}
	return false
}

// touches reports whether the set has an access of a kind in mask that
// overlaps sp.
func (s *keyset) touches(sp span, mask access) bool {
	if sp.end == "" {
		if s.points[sp.key]&mask != 0 {
			return true
		}
	} else {
		// A range against every point: ranges are rare (none on the
		// scheduler's hot path), so this stays cheap.
		for k, a := range s.points {
			if a&mask != 0 && sp.overlaps(span{key: k}) {
				return true
			}
		}
	}
	for _, r := range s.ranges {
		if r.access&mask != 0 && r.overlaps(sp) {
			return true
		}
	}
	return false
}
