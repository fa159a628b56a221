package txnbatch

import (
	"math/rand/v2"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The keyset's index answers as checking every span of the set one by one
// would: keys, directories, other ranges and ranges from a key on, added
// before and after the set first meets a directory, across resets.
func TestKeysetAgreesWithOverlaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 31))
	segs := []string{"a", "b", "ab", "a0", ""}
	key := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString("/" + segs[rng.IntN(len(segs))])
		}
		if rng.IntN(3) == 0 {
			b.WriteString("/")
		}
		return b.String()
	}
	randSpan := func() span {
		switch k := key(); rng.IntN(8) {
		case 0, 1, 2:
			return span{key: k}
		case 3, 4:
			d := strings.TrimRight(k, "/") + "/"
			return span{d, clientv3.GetPrefixRangeEnd(d)}
		case 5:
			return span{k, "\x00"}
		default:
			if o := key(); o > k {
				return span{k, o}
			}
			return span{key: k}
		}
	}
	var set keyset
	checks := 0
	for range 3000 {
		set.reset()
		var all []ranged
		for range rng.IntN(10) {
			var f footprint
			for range 1 + rng.IntN(3) {
				f.reads = append(f.reads, randSpan())
			}
			for range rng.IntN(3) {
				f.writes = append(f.writes, randSpan())
			}
			if rng.IntN(2) == 0 {
				want := false
				for _, r := range all {
					for _, sp := range f.writes {
						want = want || r.overlaps(sp)
					}
					for _, sp := range f.reads {
						want = want || r.access&write != 0 && r.overlaps(sp)
					}
				}
				if got := set.conflicts(&f); got != want {
					t.Fatalf("set %+v, member %+v: conflict %v, want %v", all, f, got, want)
				}
				checks++
			}
			set.add(&f)
			for _, sp := range f.writes {
				all = append(all, ranged{sp, write})
			}
			for _, sp := range f.reads {
				all = append(all, ranged{sp, read})
			}
		}
	}
	if checks < 5000 {
		t.Fatalf("only %d checks", checks)
	}
}
