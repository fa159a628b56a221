package worker

import (
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// cancels mirrors cancel/: requests to stop a running run, from the API
// or from a worker that replaces the run (overlap: replace), by run id,
// each with its reason. The worker holding the run cancels it when the
// request appears.
type cancels struct {
	*mirror.Map[string, string]
}

// newCancels calls notify with each request that appears (and with each
// one a fresh read finds).
func newCancels(layout keys.Layout, notify func(runID, reason string)) *cancels {
	m := mirror.NewMap(func(key string) (string, bool) { return layout.CancelRun(key), true },
		func(kv *mvccpb.KeyValue, _ string, _ bool) (string, bool) { return string(kv.Value), true })
	m.Subscribe(func(changes []mirror.Change[string, string]) {
		for _, c := range changes {
			if !c.Deleted {
				notify(c.Key, c.Value)
			}
		}
	})
	return &cancels{m}
}

// Requested returns the reason a cancel of runID was asked for.
func (c *cancels) Requested(runID string) (string, bool) { return c.Get(runID) }
