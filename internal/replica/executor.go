package replica

import (
	"log/slog"

	"github.com/etcdsched/scheduler/internal/target"
)

// newExecutor makes the replica's executor with what this binary and host
// allow (target.Options.Discover), then ends the run cgroups that replicas
// gone before it left behind: one without a supervisor, or whose
// supervisor was killed with it, cannot end its own.
func newExecutor(log *slog.Logger, supervised bool) (*target.Executor, error) {
	e, err := target.NewExecutor(target.Options{Logger: log}.Discover(supervised))
	if err != nil {
		return nil, err
	}
	n, err := e.SweepCgroups()
	if err != nil {
		log.Warn("ending run cgroups of replicas that are gone", "err", err)
	}
	if n > 0 {
		log.Info("ended run cgroups of replicas that are gone", "count", n)
	}
	return e, nil
}
