//go:build !unsafe_shedtwice

package worker

import "context"

// shedTwice is nothing in a release: a tick in a chunk record has no
// record of its own (shedtwice_unsafe.go is the positive control's).
func (a *assignedRunner) shedTwice(context.Context, []unclaimedEnd) {}
