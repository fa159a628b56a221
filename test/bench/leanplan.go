package main

import (
	"fmt"
	"strings"
)

// The lean floor's plan: which jobs each worker runs, which cursors an
// instant moves, how the transactions of docs/protocol.md's fast path are
// cut, and what they should cost etcd. Pure functions, so that the
// prediction printed beside the measurement is tested.
const (
	leanWindow  = 7   // L: instants one cursor write covers (the lookahead at one tick a second)
	leanChunk   = 40  // runs per claim transaction
	leanRelease = 40  // K: releases per commit, each a nested transaction
	leanMaxCmps = 120 // compares per transaction, under etcd's default --max-txn-ops (128)
	// leanMaxChunks: a worker's cleanup compares and deletes its
	// assignment and every chunk's marker in one transaction.
	leanMaxChunks = leanMaxCmps - 1
)

// leanJobName is job i's name; fixed width, so that no job's queue prefix
// is a prefix of another's.
func leanJobName(i int) string { return fmt.Sprintf("job-%05d", i) }

// leanAssign gives job i to worker i mod w, as the rendezvous ranking
// spreads jobs evenly.
func leanAssign(n, w int) [][]int {
	out := make([][]int, w)
	for i := range n {
		out[i%w] = append(out[i%w], i)
	}
	return out
}

// leanChunks cuts a worker's jobs into claim chunks of up to size runs.
func leanChunks(jobs []int, size int) [][]int {
	var out [][]int
	for lo := 0; lo < len(jobs); lo += size {
		out = append(out, jobs[lo:min(lo+size, len(jobs))])
	}
	return out
}

// leanCursorsDue are the jobs of n whose cursor the instant moves: job j on
// the instants where (instant + j) mod l is 0, so that each cursor is
// written once per l instants and every instant writes about n/l of them.
func leanCursorsDue(n int, instant int64, l int) []int {
	var out []int
	for j := int((int64(l) - instant%int64(l)) % int64(l)); j < n; j += l {
		out = append(out, j)
	}
	return out
}

// leanNames is the value of an assignment or a claim marker: the names of
// its jobs, joined by commas.
func leanNames(jobs []int) string {
	var b strings.Builder
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(leanJobName(j))
	}
	return b.String()
}

// leanAuthorizeGroups cuts an instant's cursors into the authorize
// transactions that carry them: each has the fence's compare, the first
// also the compares of the assignments, and none more than maxCmps
// compares. There is always a first group (an instant without cursors still
// writes its assignments).
func leanAuthorizeGroups(cursors []int, assignments, maxCmps int) [][]int {
	room := maxCmps - 1 - assignments
	out := [][]int{cursors[:min(room, len(cursors))]}
	for lo := len(out[0]); lo < len(cursors); lo += maxCmps - 1 {
		out = append(out, cursors[lo:min(lo+maxCmps-1, len(cursors))])
	}
	return out
}

// leanCost is what etcd does per run: index operations (each compare a
// range, each put a put, each delete a delete, as etcd_mvcc_* count them)
// and revisions (one per transaction that writes).
type leanCost struct {
	IndexOps  float64 `json:"index_ops"`
	Revisions float64 `json:"revisions"`
}

// leanPredict is the fast path's cost per run with n runs an instant among
// w workers, each job holding history records, averaged over leanWindow
// times leanPruneEvery instants (every cursor moves and every history is
// pruned a whole number of times in it), when no compare fails; slot: each
// run holds a slot of its own (the protocol), or not (what the slot's four
// operations cost, measured apart).
func leanPredict(n, w, history int, slot bool) leanCost {
	if n <= 0 || w <= 0 {
		return leanCost{}
	}
	var sum leanCost
	const instants = leanWindow * leanPruneEvery
	for instant := range int64(instants) {
		c := leanInstantCost(n, w, history, instant, slot)
		sum.IndexOps += c.IndexOps
		sum.Revisions += c.Revisions
	}
	runs := float64(n * instants)
	return leanCost{IndexOps: sum.IndexOps / runs, Revisions: sum.Revisions / runs}
}

// leanInstantCost is what one instant of n runs among w workers costs in
// all: its authorization, then each worker's assignment, and with a
// history each job's prune when it is due (leanDriver.prune: a range
// delete is one index operation, in the release's revision).
func leanInstantCost(n, w, history int, instant int64, slot bool) leanCost {
	var c leanCost
	if history > 0 && (instant+1)%leanPruneEvery == 0 {
		c.IndexOps += float64(n)
	}
	jobs := leanAssign(n, w)
	assignments := 0
	for _, js := range jobs {
		if len(js) > 0 {
			assignments++
		}
	}
	for g, grp := range leanAuthorizeGroups(leanCursorsDue(n, instant, leanWindow), assignments, leanMaxCmps) {
		c.IndexOps += 1 + 2*float64(len(grp)) // the fence; each cursor's compare and put
		if g == 0 {
			c.IndexOps += 2 * float64(assignments)
		}
		c.Revisions++
	}
	for _, js := range jobs {
		o, r := leanWorkerCost(len(js), slot)
		c.IndexOps, c.Revisions = c.IndexOps+o, c.Revisions+r
	}
	return c
}

// leanWorkerCost is one worker's index operations and revisions for an
// assignment of m runs: the claims, the releases and the cleanup.
func leanWorkerCost(m int, slot bool) (ops, revs float64) {
	if m == 0 {
		return 0, 0
	}
	// Claim: per run the record's and the queue range's compares, and
	// with a slot its compare and put. Release: per run the record's put,
	// and with a slot the token's compare and the slot's delete.
	claim, release := 2.0, 1.0
	if slot {
		claim, release = 4, 3
	}
	for _, c := range leanChunks(make([]int, m), leanChunk) {
		// The assignment's compare, the marker's put.
		ops += 2 + claim*float64(len(c))
		revs++
		ops += release * float64(len(c))
		revs += float64(len(leanChunks(c, leanRelease)))
	}
	// Cleanup: compare and delete the assignment and each marker.
	chunks := float64(len(leanChunks(make([]int, m), leanChunk)))
	return ops + 2*(1+chunks), revs + 1
}
