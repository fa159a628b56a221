// Package keys is the etcd key layout of docs/design.md#keys: every key the
// scheduler reads or writes is spelled here and nowhere else, so a reader
// finds the whole layout in one file and a new key cannot collide with an
// old one unnoticed.
//
// Every directory ends in "/": "slots/a" would otherwise also match the keys
// of a job named "ab".
package keys

import (
	"strconv"
	"strings"
)

// Layout is the key layout under one prefix ("/scheduler/" by default);
// one prefix is one isolated scheduler.
type Layout struct {
	Prefix string
	// SuccessInJobs puts a job's last success (LastSuccess) where
	// replicas before protocol 3 read it, jobs/<job>/succeeded, rather
	// than under succeeded/: a writer sets it while any member is older (a
	// rolling upgrade; docs/protocol.md#keys).
	SuccessInJobs bool
}

// New is the layout under prefix.
func New(prefix string) Layout { return Layout{Prefix: prefix} }

// The directories directly under the prefix.
const (
	electionDir  = "election/"
	membersDir   = "members/"
	jobsDir      = "jobs/"
	queueDir     = "queue/"
	specsDir     = "specs/"
	slotsDir     = "slots/"
	resourcesDir = "resources/"
	cancelDir    = "cancel/"
	runsDir      = "runs/"
	unstartedDir = "unstarted/"
	outboxDir    = "outbox/"
	ratesDir     = "rate/"
	removedDir   = "removed/"
	assignDir    = "assign/"
	claimedDir   = "claimed/"
	successDir   = "succeeded/"
	prunedDir    = "pruned/"
	shedDir      = "shed/"
)

// The scopes of a rate window: a job's own, or a shared resource's.
const (
	RateJob      = "job"
	RateResource = "resource"
)

// Election is where concurrency.Election campaigns: one key per candidate,
// the oldest leads.
func (l Layout) Election() string { return l.Prefix + electionDir }

// Members holds members/<id>, one per live replica, on its session lease.
func (l Layout) Members() string { return l.Prefix + membersDir }

// Member is the record of replica id.
func (l Layout) Member(id string) string { return l.Members() + id }

// MemberID is the id in a key under Members.
func (l Layout) MemberID(key string) string { return strings.TrimPrefix(key, l.Members()) }

// Jobs holds per-job state: cursors and pause markers.
func (l Layout) Jobs() string { return l.Prefix + jobsDir }

// Cursor is the last tick the leader materialized for job.
func (l Layout) Cursor(job string) string { return l.jobKey(job, cursorState) }

// Scheduled counts the scheduled runs the leaders have materialized or
// assigned for a job with max_runs (docs/configuration.md#jobs), in decimal, moved in
// the transactions that move its cursor.
func (l Layout) Scheduled(job string) string { return l.jobKey(job, scheduledState) }

// Paused exists while job is paused (or says "false" after a resume of a
// job whose file says paused).
func (l Layout) Paused(job string) string { return l.jobKey(job, pausedState) }

// Health says whether job's last run ended well ("ok") or not
// ("failing"): what decides a "recovered" or "failing" notification.
// Absent until a job with a sink for "recovered" first ends a run
// otherwise, or one with a sink for "failing" first ends a run.
func (l Layout) Health(job string) string { return l.jobKey(job, healthState) }

// CursorJob returns the job of a cursor key.
func (l Layout) CursorJob(key string) (string, bool) { return l.jobState(key, cursorState) }

// ScheduledJob returns the job of a scheduled-runs count key.
func (l Layout) ScheduledJob(key string) (string, bool) { return l.jobState(key, scheduledState) }

// PausedJob returns the job of a pause marker key.
func (l Layout) PausedJob(key string) (string, bool) { return l.jobState(key, pausedState) }

// The states a job has under jobs/<job>/, each spelled once: the keys
// below, their parsers and Kind use these.
const (
	cursorState    = "cursor"
	scheduledState = "scheduled"
	pausedState    = "paused"
	healthState    = "health"
	overdueState   = "overdue"
	succeededState = "succeeded"
)

// jobKey is job's state key.
func (l Layout) jobKey(job, state string) string { return l.Jobs() + job + "/" + state }

// jobState returns the job of a key of job's state, with no allocation (the
// mirrors call it for every event under jobs/).
func (l Layout) jobState(key, state string) (string, bool) {
	rest, ok := strings.CutPrefix(key, l.Jobs())
	if !ok {
		return "", false
	}
	job, ok := strings.CutSuffix(rest, state)
	if !ok || !strings.HasSuffix(job, "/") {
		return "", false
	}
	return job[:len(job)-1], true
}

// Queue holds every pending and running run.
func (l Layout) Queue() string { return l.Prefix + queueDir }

// JobQueue holds the queue entries of one job.
func (l Layout) JobQueue(job string) string { return l.Queue() + job + "/" }

// Entry is the queue entry of one run.
func (l Layout) Entry(job, runID string) string { return l.JobQueue(job) + runID }

// Specs holds the job specs queue entries refer to: each written once per
// version of a job's spec (and the limits its resources had), at a key
// named after a hash of its value, so entries carry the hash instead of the
// spec (docs/design-specs.md, "Queue entries name their spec").
func (l Layout) Specs() string { return l.Prefix + specsDir }

// JobSpecs holds the specs of one job.
func (l Layout) JobSpecs(job string) string { return l.Specs() + job + "/" }

// Spec is the spec of job whose value hashes to ref.
func (l Layout) Spec(job, ref string) string { return l.JobSpecs(job) + ref }

// ParseSpec splits a spec key into its job and ref; ok is false for any
// other key.
func (l Layout) ParseSpec(key string) (job, ref string, ok bool) {
	rest, found := strings.CutPrefix(key, l.Specs())
	if !found {
		return "", "", false
	}
	job, ref, found = strings.Cut(rest, "/")
	if !found || job == "" || ref == "" || strings.Contains(ref, "/") {
		return "", "", false
	}
	return job, ref, true
}

// Slots holds every job slot key.
func (l Layout) Slots() string { return l.Prefix + slotsDir }

// JobSlots holds the slot keys of one job.
func (l Layout) JobSlots(job string) string { return l.Slots() + job + "/" }

// Slot is job slot i.
func (l Layout) Slot(job string, i int) string { return l.JobSlots(job) + strconv.Itoa(i) }

// KeySlots holds the slot keys of one concurrency key of job: with a
// concurrency_key, max_concurrency holds per key value. Key values match
// [A-Za-z0-9._:-]{1,128}, so they hold no "/" and cannot be taken for an
// index.
func (l Layout) KeySlots(job, key string) string { return l.JobSlots(job) + key + "/" }

// SlotOf is slot i of job, or of its concurrency key when key is set.
func (l Layout) SlotOf(job, key string, i int) string {
	if key == "" {
		return l.Slot(job, i)
	}
	return l.KeySlots(job, key) + strconv.Itoa(i)
}

// SlotGroup is the name a job slot key is grouped under: the job, or
// "<job>/<key>" for a keyed slot (ParseSlot returns it so).
func SlotGroup(job, key string) string {
	if key == "" {
		return job
	}
	return job + "/" + key
}

// SplitSlotGroup is the inverse of SlotGroup.
func SplitSlotGroup(name string) (job, key string) {
	job, key, _ = strings.Cut(name, "/")
	return job, key
}

// Rates holds every rate window. Its keys are bound to no lease: a
// window's places must outlive the replica that stamped them, or a crash
// would admit more than count runs in a window.
func (l Layout) Rates() string { return l.Prefix + ratesDir }

// RateWindow holds the places of one window: scope is RateJob or
// RateResource.
func (l Layout) RateWindow(scope, name string) string {
	return l.Rates() + scope + "/" + name + "/"
}

// RatePlace is place i of a window: it holds the start time of the last
// run admitted through it.
func (l Layout) RatePlace(scope, name string, i int) string {
	return l.RateWindow(scope, name) + strconv.Itoa(i)
}

// ParseRate splits a rate place key; ok is false for any other key.
func (l Layout) ParseRate(key string) (scope, name string, index int, ok bool) {
	rest, found := strings.CutPrefix(key, l.Rates())
	if !found {
		return "", "", 0, false
	}
	scope, rest, found = strings.Cut(rest, "/")
	if !found || (scope != RateJob && scope != RateResource) {
		return "", "", 0, false
	}
	slash := strings.LastIndexByte(rest, '/')
	if slash <= 0 {
		return "", "", 0, false
	}
	index, err := strconv.Atoi(rest[slash+1:])
	if err != nil || index < 0 || strconv.Itoa(index) != rest[slash+1:] {
		return "", "", 0, false
	}
	return scope, rest[:slash], index, true
}

// Resources holds every shared-resource slot key.
func (l Layout) Resources() string { return l.Prefix + resourcesDir }

// Resource holds the slot keys of one shared resource.
func (l Layout) Resource(name string) string { return l.Resources() + name + "/" }

// ResourceSlot is slot i of a shared resource.
func (l Layout) ResourceSlot(name string, i int) string {
	return l.Resource(name) + strconv.Itoa(i)
}

// ParseSlot splits a job slot or resource slot key: resource is true for a
// resource's; ok is false for any other key.
func (l Layout) ParseSlot(key string) (resource bool, name string, index int, ok bool) {
	rest, found := strings.CutPrefix(key, l.Prefix)
	if !found {
		return false, "", 0, false
	}
	switch {
	case strings.HasPrefix(rest, slotsDir):
		rest = rest[len(slotsDir):]
	case strings.HasPrefix(rest, resourcesDir):
		resource, rest = true, rest[len(resourcesDir):]
	default:
		return false, "", 0, false
	}
	slash := strings.LastIndexByte(rest, '/')
	if slash <= 0 {
		return false, "", 0, false
	}
	index, err := strconv.Atoi(rest[slash+1:])
	if err != nil || index < 0 || strconv.Itoa(index) != rest[slash+1:] {
		return false, "", 0, false
	}
	return resource, rest[:slash], index, true
}

// Cancels holds requests to stop running runs.
func (l Layout) Cancels() string { return l.Prefix + cancelDir }

// Cancel asks the holder of runID to stop it.
func (l Layout) Cancel(runID string) string { return l.Cancels() + runID }

// CancelRun is the run id of a key under Cancels.
func (l Layout) CancelRun(key string) string { return strings.TrimPrefix(key, l.Cancels()) }

// Runs holds finished-run records.
func (l Layout) Runs() string { return l.Prefix + runsDir }

// JobRuns holds the records of one job.
func (l Layout) JobRuns(job string) string { return l.Runs() + job + "/" }

// RecordJob is the job of a key under Runs.
func (l Layout) RecordJob(key string) string {
	job, _, _ := strings.Cut(strings.TrimPrefix(key, l.Runs()), "/")
	return job
}

// Record is the finished-run record of runID.
func (l Layout) Record(job, runID string) string { return l.JobRuns(job) + runID }

// Removed holds removed/<job>, written by the leader when its config
// lacks a job that has records; the value is the removal time (RFC 3339).
// The leader deletes the job's records and the marker
// cluster.removed_history_ttl after it, or the marker alone when the job
// comes back.
func (l Layout) Removed() string { return l.Prefix + removedDir }

// RemovedJob is the removal marker of job.
func (l Layout) RemovedJob(job string) string { return l.Removed() + job }

// Pruned is pruned/<job>: the stretches of the job's ticks whose records
// may have been deleted, by the leader's prune or a removed job's cleanup
// (package jobs/pruned). A backfill takes a tick in one as existing
// (docs/design-leader.md#backfill-never-reruns-a-tick).
func (l Layout) Pruned(job string) string { return l.Prefix + prunedDir + job }

// RemovedName is the job of a key under Removed.
func (l Layout) RemovedName(key string) string { return strings.TrimPrefix(key, l.Removed()) }

// Unstarted holds a marker per record of a run that never started (skipped
// or missed), written with the record: pruning reads keys only, and keeps
// those records apart from runs that executed (skipped_history_limit).
func (l Layout) Unstarted(job string) string { return l.UnstartedMarks() + job + "/" }

// UnstartedMarks holds every job's markers under Unstarted.
func (l Layout) UnstartedMarks() string { return l.Prefix + unstartedDir }

// UnstartedMark is the marker of runID's record.
func (l Layout) UnstartedMark(job, runID string) string { return l.Unstarted(job) + runID }

// RecordRun is the run id of a record's key (or an entry's: both end in
// it); run ids hold no "/".
func (l Layout) RecordRun(key string) string { return key[strings.LastIndexByte(key, '/')+1:] }

// Outbox holds notifications not yet delivered, one key per sink and
// event, written in the transaction of the record that causes them.
func (l Layout) Outbox() string { return l.Prefix + outboxDir }

// Notification is the outbox key of notification id for sink.
func (l Layout) Notification(sink, id string) string { return l.Outbox() + sink + "/" + id }
