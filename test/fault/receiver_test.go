package fault

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/etcdsched/scheduler/internal/notify"
)

// receiver is the workload's notification sink, in the test process: it
// refuses the first try of every fourth notification (so retries happen)
// and remembers every id it took.
type receiver struct {
	srv *httptest.Server

	mu    sync.Mutex
	tries map[string]int
	took  map[string]bool
}

func startReceiver(t *testing.T) *receiver {
	r := &receiver{tries: map[string]int{}, took: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get(notify.HeaderID)
		r.mu.Lock()
		r.tries[id]++
		refuse := r.tries[id] == 1 && len(r.tries)%4 == 0
		if !refuse {
			r.took[id] = true
		}
		r.mu.Unlock()
		if refuse {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// taken are the ids answered 2xx.
func (r *receiver) taken() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.took))
	for id := range r.took {
		out[id] = true
	}
	return out
}
