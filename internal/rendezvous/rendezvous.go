// Package rendezvous ranks members for a key by highest random weight:
// every replica computes the same order from the same list, and a member
// joining or leaving moves only the keys it wins or held. The worker ranks
// itself for a queued run with it, the leader picks the worker of an
// assigned tick with it.
package rendezvous

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strings"
)

// Score is member's weight for key: the highest goes first.
//
// FNV-1a alone is not enough here. Member ids differ in their last bytes
// (r1, r2, r3; a pod name's suffix), and FNV-1a's last steps, (h^b)*prime,
// leave the order of the members' hashes decided by a few low bits of the
// key's hash, which the last bytes of the key decide: every job's run due
// at one instant ranked the same member first, or split on one bit of the
// job's name, so one replica took a whole instant's claims (and all of
// them waited a backup's delay when it died). A 64-bit finalizer
// (MurmurHash3's fmix64) over the FNV hash makes every bit of the key and
// the id count in the order.
func Score(key, member string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(member))
	return fmix64(h.Sum64())
}

// fmix64 is MurmurHash3's 64-bit finalizer: each input bit flips each
// output bit with probability about one half.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// Pick is the member of members that goes first for key ("" when there
// is none); ties, which need equal scores, go to the smaller name.
func Pick(members []string, key string) string {
	best, bestScore := "", uint64(0)
	for _, m := range members {
		if s := Score(key, m); best == "" || s > bestScore || s == bestScore && m < best {
			best, bestScore = m, s
		}
	}
	return best
}

// Top is the k members of members that go first for key, in that order
// (all of them, ranked, when they are k or fewer).
func Top(members []string, key string, k int) []string {
	type scored struct {
		m string
		s uint64
	}
	all := make([]scored, len(members))
	for i, m := range members {
		all[i] = scored{m, Score(key, m)}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.s != b.s {
			return cmp.Compare(b.s, a.s)
		}
		return strings.Compare(a.m, b.m)
	})
	out := make([]string, 0, min(k, len(all)))
	for _, x := range all[:min(k, len(all))] {
		out = append(out, x.m)
	}
	return out
}
