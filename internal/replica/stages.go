package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// stages are groups of goroutines stopped one group at a time, so shutdown
// follows an order (docs/design.md#start-and-stop-order) rather than cancelling everything at once.
type stages struct {
	errs chan error
}

type stage struct {
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

func (s *stages) add(name string) *stage {
	if s.errs == nil {
		s.errs = make(chan error, 32)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &stage{name: name, ctx: ctx, cancel: cancel, errs: s.errs}
}

// serve runs f until the stage stops; an error is reported once.
func (st *stage) serve(name string, f func(context.Context) error) {
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		if err := f(st.ctx); err != nil && !errors.Is(err, context.Canceled) {
			st.errs <- fmt.Errorf("%s: %w", name, err)
		}
	}()
}

// stopWithin cancels the stage and waits for its goroutines at most d. It
// reports false when they were still running: a step that waits on an
// unreachable etcd (etcd's Campaign cleans up under the client's own
// context) then ends when the client closes, and shutdown goes on.
func (st *stage) stopWithin(d time.Duration) bool {
	st.cancel()
	return waitWithin(st.wg.Wait, d)
}

// waitWithin runs wait and reports whether it returned within d; when it
// did not, it is left to return on its own.
func waitWithin(wait func(), d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// wait collects errors reported after the first.
func (s *stages) wait() error {
	var err error
	for {
		select {
		case e := <-s.errs:
			err = errors.Join(err, e)
		default:
			return err
		}
	}
}
