package fault

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// The binaries are built once per test run, without -race: they are the
// system under test.
var (
	binDir   string
	binMu    sync.Mutex
	binCache = map[string]cluster.Binaries{}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fault-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// binaries builds (once) the scheduler with tags and the etcd member.
func binaries(t *testing.T, tags ...string) cluster.Binaries {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	key := fmt.Sprint(tags)
	if b, ok := binCache[key]; ok {
		return b
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	b, err := cluster.Build(ctx, binDir, tags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %v in %s", tags, time.Since(start).Round(time.Millisecond))
	binCache[key] = b
	return b
}
