package replica

import (
	"context"

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

func (c cluster) Slots() []slots.Info { return c.slots.List() }
