package keys

import (
	"strconv"
	"strings"
	"time"
)

// The lean run protocol's keys (docs/protocol.md): assignments, claim
// markers and the incarnations they name.

// InstantFormat spells the instant of an assignment key: UTC with a fixed
// nine-digit fraction, so keys sort in time order (RFC3339Nano drops
// trailing zeros, and "05Z" sorts after "05.5Z").
const InstantFormat = "2006-01-02T15:04:05.000000000Z"

// Assignments holds assign/<worker>/<instant>/<group>: the jobs whose tick
// at that instant the worker runs (the lean protocol, docs/protocol.md).
// The group tells apart the assignments of one worker and instant that
// were authorized in different transactions (the leader writes at most
// a transaction's worth of jobs to one assignment).
func (l Layout) Assignments() string { return l.Prefix + assignDir }

// WorkerAssignments holds the assignments of one worker.
func (l Layout) WorkerAssignments(worker string) string { return l.Assignments() + worker + "/" }

// ReplicaAssignments holds the assignments of every incarnation of replica
// id (Incarnation): a worker watches it and keeps its current one's.
func (l Layout) ReplicaAssignments(id string) string { return l.Assignments() + id + "." }

// Incarnation names a replica on one session lease: the worker an
// assignment names. A replica that moves to a new session is a new worker;
// the leader resolves what its old incarnation left (docs/protocol.md).
func Incarnation(id string, lease int64) string { return id + "." + strconv.FormatInt(lease, 16) }

// ParseIncarnation splits an incarnation into the replica id and lease;
// ok is false for a worker name that is not one.
func ParseIncarnation(worker string) (id string, lease int64, ok bool) {
	i := strings.LastIndexByte(worker, '.')
	if i <= 0 {
		return "", 0, false
	}
	lease, err := strconv.ParseInt(worker[i+1:], 16, 64)
	if err != nil || lease <= 0 || strconv.FormatInt(lease, 16) != worker[i+1:] {
		return "", 0, false
	}
	return worker[:i], lease, true
}

// Assignment is the assignment of worker at instant, in group.
func (l Layout) Assignment(worker string, instant time.Time, group string) string {
	return l.WorkerAssignments(worker) + instant.UTC().Format(InstantFormat) + "/" + group
}

// ParseAssignment splits an assignment key; ok is false for any other key.
func (l Layout) ParseAssignment(key string) (worker string, instant time.Time, group string, ok bool) {
	rest, found := strings.CutPrefix(key, l.Assignments())
	if !found {
		return "", time.Time{}, "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return "", time.Time{}, "", false
	}
	instant, ok = parseInstant(parts[1])
	return parts[0], instant, parts[2], ok
}

// Claimed holds claimed/<worker>/<instant>/<group>/<chunk>: the runs each
// chunk of an assignment's claims tried.
func (l Layout) Claimed() string { return l.Prefix + claimedDir }

// WorkerClaimed holds the claim markers of one worker.
func (l Layout) WorkerClaimed(worker string) string { return l.Claimed() + worker + "/" }

// AssignmentClaimed holds the claim markers of one assignment.
func (l Layout) AssignmentClaimed(worker string, instant time.Time, group string) string {
	return l.WorkerClaimed(worker) + instant.UTC().Format(InstantFormat) + "/" + group + "/"
}

// ClaimMarker is the marker of one chunk of an assignment's claims.
func (l Layout) ClaimMarker(worker string, instant time.Time, group string, chunk int) string {
	return l.AssignmentClaimed(worker, instant, group) + strconv.Itoa(chunk)
}

// ParseClaimMarker splits a claim marker key; ok is false for any other key.
func (l Layout) ParseClaimMarker(key string) (worker string, instant time.Time, group string, chunk int, ok bool) {
	rest, found := strings.CutPrefix(key, l.Claimed())
	if !found {
		return "", time.Time{}, "", 0, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] == "" || parts[2] == "" {
		return "", time.Time{}, "", 0, false
	}
	chunk, err := strconv.Atoi(parts[3])
	if err != nil || chunk < 0 || strconv.Itoa(chunk) != parts[3] {
		return "", time.Time{}, "", 0, false
	}
	instant, ok = parseInstant(parts[1])
	return parts[0], instant, parts[2], chunk, ok
}

// parseInstant reads an instant only as InstantFormat spells it, so one
// instant has one key.
func parseInstant(s string) (time.Time, bool) {
	t, err := time.Parse(InstantFormat, s)
	if err != nil || t.Format(InstantFormat) != s {
		return time.Time{}, false
	}
	return t, true
}
