//go:build !linux

package target

import "errors"

// Child subreapers are a Linux feature; elsewhere init reaps the orphans.

func becomeSubreaper() error           { return errors.New("no child subreaper outside Linux") }
func reapOrphans(int, <-chan struct{}) {}
func reapAll()                         {}
