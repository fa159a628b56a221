package queue

import (
	"encoding/json"
	"sync"

	"github.com/etcdsched/scheduler/config"
)

// specs holds the job specs decoded from queue entries, by their JSON.
//
// Every replica decodes every queue entry it sees, twice per run (pending,
// then running), and the spec is most of each entry and the same for all of
// a job's runs until its config changes: at 1,500 runs/s decoding it was a
// tenth of each replica's CPU (test/bench profiles).
var specs = specCache{byJSON: map[string]*config.Job{}}

// specCacheSize bounds the cache; when full it starts over. A job spec is
// about a kilobyte decoded, so the cache stays near 4 MB.
const specCacheSize = 4096

type specCache struct {
	mu     sync.Mutex
	byJSON map[string]*config.Job
}

// decode returns the spec encoded as raw. The result is shared: callers
// copy it and must not change what its maps and slices hold.
func (c *specCache) decode(raw []byte) (*config.Job, error) {
	c.mu.Lock()
	j, ok := c.byJSON[string(raw)]
	c.mu.Unlock()
	if ok {
		return j, nil
	}
	j = new(config.Job)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, j); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	if len(c.byJSON) >= specCacheSize {
		clear(c.byJSON)
	}
	c.byJSON[string(raw)] = j
	c.mu.Unlock()
	return j, nil
}
