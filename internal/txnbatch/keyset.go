package txnbatch

// keyset is the union of footprints already in a batch (or waiting before
// a member), indexed so a member is checked in time linear in its own keys
// and their depth.
//
// Single keys and directories (the range of every key under a prefix that
// ends in '/': the lean claim's compare that nobody of a job waits in its
// queue is one) are indexed; other ranges are rare and checked one by one.
// Directory d holds key k exactly when d is one of k's prefixes that end in
// '/' (k itself when it is a directory), so a key is checked against the
// directories above it with a lookup each (above), and a directory against
// the keys and directories under it with one (under: built when the set
// first meets a directory, so a batch without one never pays for it).
type keyset struct {
	points   map[string]access
	prefixes map[string]access // directories, by their prefix
	under    map[string]access // per directory, the accesses at or under it
	indexed  bool              // under holds every point and directory
	ranges   []ranged
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
	clear(s.prefixes)
	clear(s.under)
	s.indexed = false
	s.ranges = s.ranges[:0]
}

func (s *keyset) add(f *footprint) {
	if s.points == nil {
		s.points, s.prefixes, s.under = map[string]access{}, map[string]access{}, map[string]access{}
	}
	for _, sp := range f.writes {
		s.put(sp, write)
	}
	for _, sp := range f.reads {
		s.put(sp, read)
	}
}

func (s *keyset) put(sp span, a access) {
	switch {
	case sp.end == "":
		s.points[sp.key] |= a
	case sp.isDir():
		s.prefixes[sp.key] |= a
	default:
		s.ranges = append(s.ranges, ranged{sp, a})
		return
	}
	if s.indexed {
		s.index(sp.key, a)
	}
}

// index notes a at every directory holding key.
func (s *keyset) index(key string, a access) {
	for i := range len(key) {
		if key[i] == '/' {
			s.under[key[:i+1]] |= a
		}
	}
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
	switch {
	case sp.end == "":
		if s.points[sp.key]&mask != 0 || s.above(sp.key, mask) {
			return true
		}
	case sp.isDir():
		if s.above(sp.key, mask) || s.indexUnder()[sp.key]&mask != 0 {
			return true
		}
	default:
		for k, a := range s.points {
			if a&mask != 0 && sp.overlaps(span{key: k}) {
				return true
			}
		}
		for d, a := range s.prefixes {
			if a&mask != 0 && sp.overlaps(span{d, d[:len(d)-1] + "0"}) {
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

// above reports whether a directory holding key has an access in mask.
func (s *keyset) above(key string, mask access) bool {
	if len(s.prefixes) == 0 {
		return false
	}
	for i := range len(key) {
		if key[i] == '/' && s.prefixes[key[:i+1]]&mask != 0 {
			return true
		}
	}
	return false
}

func (s *keyset) indexUnder() map[string]access {
	if !s.indexed {
		for k, a := range s.points {
			s.index(k, a)
		}
		for d, a := range s.prefixes {
			s.index(d, a)
		}
		s.indexed = true
	}
	return s.under
}
