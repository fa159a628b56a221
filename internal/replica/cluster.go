package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/internal/api"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// cluster is the API's view of this replica's parts.
type cluster struct {
	*jobs.Engine
	sessions   *session.Manager
	elector    *election.Elector
	membership *election.Membership
	slots      *slots.Semaphore
}

func (c cluster) Leader(ctx context.Context) (election.Leader, error) { return c.elector.Leader(ctx) }

func (c cluster) Members(ctx context.Context) ([]election.Member, error) {
	return c.membership.List(ctx)
}

// Slots lists the held slots, as etcd holds them, then each configured
// rate window.
func (c cluster) Slots(ctx context.Context) ([]slots.Info, error) {
	list, err := c.slots.Held(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range c.slots.Windows(c.RateWindows(), time.Now()) {
		list = append(list, slots.Info{Window: &w})
	}
	return list, nil
}

// Confirm: the views are confirmed while the session is alive, that is,
// while etcd acknowledged a keepalive sent less than a TTL (minus the
// margin) ago; every view is a watch on the same etcd, so past that they
// may be stale.
func (c cluster) Confirm(context.Context) error {
	if !c.sessions.Alive() {
		return fmt.Errorf("%w: no session: etcd has not acknowledged this replica for a TTL", api.ErrUnconfirmed)
	}
	return nil
}
