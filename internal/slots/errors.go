package slots

import (
	"errors"
	"fmt"
)

var (
	// ErrFull: every slot of the job, or of one of its resources, is taken.
	ErrFull = errors.New("slots: no free slot")
	// ErrConflict: the caller's own compares failed (for example the queue
	// entry changed because another worker claimed the run and rewrote it as
	// running), so nothing was written.
	ErrConflict = errors.New("slots: claim conditions failed")
	// ErrNotOwner: a release found the slot no longer held with this token;
	// it was lost meanwhile and the caller's operations were not applied.
	ErrNotOwner = errors.New("slots: not the owner")
	// ErrLost: the slot was deleted under its holder (lease expired or
	// revoked).
	ErrLost = errors.New("slots: slot lost")
	// ErrReleased: the holder released the slot.
	ErrReleased = errors.New("slots: released")
	// ErrIndeterminate: the response was lost and reading back could not
	// tell what happened before the session (or the caller's context) ended.
	ErrIndeterminate = errors.New("slots: outcome unknown")
)

// errGoneUnanswered ends a claim whose keys the view saw deleted after a
// send of its release went unanswered and its caller gave up: most likely
// by that release, applied late; the slot of a tracked claim on a live
// lease is deleted otherwise only by a take-over of an unstarted run
// (assign.StealAhead), and with the lease gone the session's end has
// ended the claim first. It must not wrap ErrLost: the worker's settle
// stops on that, and here the next Release reads back what happened.
var errGoneUnanswered = fmt.Errorf("slots: the slot was deleted after its release went unanswered: %w", ErrIndeterminate)
