package replica

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// TestExecutorSupervisedAsMainSays: a replica starts exec runs under a
// supervisor when its Options say main called target.Supervise, and
// warns that they are unsupervised when not.
func TestExecutorSupervisedAsMainSays(t *testing.T) {
	const unsupervised = "exec runs are not supervised: a command outlives a replica killed with SIGKILL"
	for _, supervised := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "jobs.yaml")
		if err := os.WriteFile(path, []byte(etcdtest.Config(newEtcd(t), "/executor/", echoJob)), 0o600); err != nil {
			t.Fatal(err)
		}
		r := startReplica(t, "e1", path, noWatch, func(o *Options) { o.Supervised = supervised })
		if warned := r.logs.Find(unsupervised) != nil; warned == supervised {
			t.Errorf("Supervised %v: warned %v that exec runs are not supervised", supervised, warned)
		}
		r.shutdown()
	}
}
