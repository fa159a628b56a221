package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/gcfloor"
)

// startGCFloor keeps the garbage collector's headroom floor (internal/gcfloor;
// deploy/README.md#memory) while the replica runs, unless the operator set
// GOGC, whose setting then stands. The returned stop ends it and returns
// once it has put the GC percent back.
func startGCFloor(ctx context.Context, log *slog.Logger) (stop func()) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		log.Info("GOGC is set: the garbage collector keeps it, with no headroom floor", "gogc", v)
		return func() {}
	}
	f, err := gcfloor.New(gcfloor.Default, time.Second, clockwork.NewRealClock(), nil)
	if err != nil {
		log.Error("the garbage collector's headroom floor is off", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
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
