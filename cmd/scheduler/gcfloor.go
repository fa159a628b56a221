package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/gcfloor"
)

// startGCFloor keeps the garbage collector's headroom floor
// (internal/gcfloor; deploy/README.md#memory) until the returned stop, which
// returns once the floor has put the GC percent back. Its context is not the
// signals': a replica draining after SIGTERM keeps the floor. A GOGC the
// operator set stands instead (an empty one is unset, as for the runtime).
func startGCFloor(log *slog.Logger) (stop func()) {
	if v := os.Getenv("GOGC"); v != "" {
		log.Info("GOGC is set: the garbage collector keeps it, with no headroom floor", "gogc", v)
		return func() {}
	}
	f, err := gcfloor.New(gcfloor.Default, gcfloor.Every, clockwork.NewRealClock(), nil)
	if err != nil {
		log.Error("the garbage collector's headroom floor is off", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
