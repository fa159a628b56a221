package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A replica keeps the garbage collector's headroom floor: while its live
// heap is under the floor its GC percent (go_gc_gogc_percent, from the Go
// collector on /metrics) is above GOGC's default of 100; with GOGC set,
// the operator's value stands.
func TestAReplicaKeepsTheGCFloorUnlessGOGCIsSet(t *testing.T) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		t.Skip("GOGC is set in the test's environment, and the replicas inherit it")
	}
	etcd := etcdtest.Start(t)
	floor := startProc(t, "floor", writeConfig(t, etcd.Endpoints()[0], "/gcfloor/", ""))
	poll.Until(t, 30*time.Second, "the floor's GC percent", func() (bool, string) {
		p, err := gogcPercent(floor)
		return err == nil && p > 100, fmt.Sprintf("go_gc_gogc_percent %v, %v", p, err)
	})
	set := startProcEnv(t, "set", writeConfig(t, etcd.Endpoints()[0], "/gcfloor-set/", ""), "GOGC=150")
	if p, err := gogcPercent(set); err != nil || p != 150 {
		t.Errorf("with GOGC=150: go_gc_gogc_percent %v, %v; want 150", p, err)
	}
	if set.logs.Find("GOGC is set: the garbage collector keeps it, with no headroom floor") == nil {
		t.Error("with GOGC set: no log line says the floor is off")
	}
}

// gogcPercent is go_gc_gogc_percent on p's /metrics.
func gogcPercent(p *proc) (float64, error) {
	body, err := p.api.Metrics(context.Background())
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, "go_gc_gogc_percent "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no go_gc_gogc_percent on %s's /metrics", p.id)
}
