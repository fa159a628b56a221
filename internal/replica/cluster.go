package replica

import (
	"context"
	"time"

	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// cluster is the API's view of this replica's parts.
type cluster struct {
	*jobs.Engine
	elector    *election.Elector
	membership *election.Membership
	slots      *slots.Semaphore
}

func (c cluster) Leader(ctx context.Context) (election.Leader, error) { return c.elector.Leader(ctx) }

func (c cluster) Members(ctx context.Context) ([]election.Member, error) {
	return c.membership.List(ctx)
}

// Slots lists the held slots, then each configured rate window.
func (c cluster) Slots() []slots.Info {
	list := c.slots.List()
	for _, w := range c.slots.Windows(c.RateWindows(), time.Now()) {
		list = append(list, slots.Info{Window: &w})
	}
	return list
}
