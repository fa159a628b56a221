package main

import (
	"fmt"
	"io"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/capacity"
)

// capacityCommand is validate --capacity: the report, and exit 3 when the
// peak passes maxPeak (0: no bound).
func capacityCommand(cfg *config.Config, now time.Time, window time.Duration, maxPeak int, stdout, stderr io.Writer) int {
	rep, err := capacity.Estimate(cfg, now, window)
	if err != nil {
		return usageError(stderr, fmt.Errorf("%w: %w", errUsage, err))
	}
	capacity.Render(stdout, rep)
	if maxPeak > 0 && rep.Peak.Runs > maxPeak {
		fmt.Fprintf(stderr, "scheduler: %d runs due in one second passes --max-peak %d: see the hint\n",
			rep.Peak.Runs, maxPeak)
		return exitDiffers
	}
	return exitOK
}
