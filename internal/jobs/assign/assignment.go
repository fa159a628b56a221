package assign

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Job is one job of an assignment and the spec its tick runs
// (specs/<job>/<ref>, as queue entries refer to it).
type Job struct {
	Name    string
	SpecRef string
}

// Assignment is the jobs whose tick at At the worker runs; the run ids are
// today's, <job>@<At>. Group tells apart the assignments of one worker and
// instant written by different transactions.
type Assignment struct {
	Worker string
	At     time.Time
	Group  string
	Jobs   []Job
}

// Key is where the assignment is stored.
func (a *Assignment) Key(k keys.Layout) string { return k.Assignment(a.Worker, a.At, a.Group) }

// RunID is the id of job's run at the assignment's instant.
func (a *Assignment) RunID(job string) string { return runs.ID(job, a.At) }

// Names are the assignment's jobs in order.
func (a *Assignment) Names() []string {
	names := make([]string, len(a.Jobs))
	for i, j := range a.Jobs {
		names[i] = j.Name
	}
	return names
}

// Has reports whether the assignment names job.
func (a *Assignment) Has(job string) bool {
	for _, j := range a.Jobs {
		if j.Name == job {
			return true
		}
	}
	return false
}

// Validate says what makes the assignment unusable, in the words of its
// worker, instant and job.
func (a *Assignment) Validate() error {
	switch {
	case a.Worker == "" || strings.Contains(a.Worker, "/"):
		return fmt.Errorf("assign: assignment at %s: worker %q must be a member id without '/'", a.At.UTC().Format(runs.TimeFormat), a.Worker)
	case a.Group == "" || strings.Contains(a.Group, "/"):
		return fmt.Errorf("assign: assignment of worker %s at %s: group %q must be a name without '/'", a.Worker, a.At.UTC().Format(runs.TimeFormat), a.Group)
	case a.At.IsZero():
		return fmt.Errorf("assign: assignment of worker %s has no instant", a.Worker)
	case len(a.Jobs) == 0:
		return fmt.Errorf("assign: assignment of worker %s at %s names no job", a.Worker, a.At.UTC().Format(runs.TimeFormat))
	}
	seen := make(map[string]bool, len(a.Jobs))
	for _, j := range a.Jobs {
		if j.Name == "" || strings.Contains(j.Name, "/") || seen[j.Name] {
			return fmt.Errorf("assign: assignment of worker %s at %s: job %q is empty, holds '/' or is named twice", a.Worker, a.At.UTC().Format(runs.TimeFormat), j.Name)
		}
		seen[j.Name] = true
	}
	return nil
}

// Encode is the stored value: a JSON array of [job, spec ref] pairs, the
// worker and instant being in the key.
func (a *Assignment) Encode() string {
	pairs := make([][2]string, len(a.Jobs))
	for i, j := range a.Jobs {
		pairs[i] = [2]string{j.Name, j.SpecRef}
	}
	b, _ := json.Marshal(pairs) // strings only: cannot fail
	return string(b)
}

// Decode reads the assignment stored at key.
func Decode(k keys.Layout, key string, value []byte) (Assignment, error) {
	worker, at, group, ok := k.ParseAssignment(key)
	if !ok {
		return Assignment{}, fmt.Errorf("assign: %q is not an assignment key", key)
	}
	var pairs [][2]string
	if err := json.Unmarshal(value, &pairs); err != nil {
		return Assignment{}, fmt.Errorf("assign: assignment %s: %w", key, err)
	}
	a := Assignment{Worker: worker, At: at, Group: group, Jobs: make([]Job, len(pairs))}
	for i, p := range pairs {
		a.Jobs[i] = Job{Name: p[0], SpecRef: p[1]}
	}
	return a, a.Validate()
}

// aheadMark ends the job list of a claim marker whose chunk was claimed
// before its instant and has not started: no job is named so (a name holds
// no '/'). The worker rewrites the marker without it at the instant, before
// any of the chunk's runs starts (StartChunk), so a marker that still ends
// with it names runs that did not start (docs/protocol.md, "Start marks").
// A replica of the commit before start marks decodes it as a job no
// assignment names, and takes the chunk's runs for started: lost, as it did.
const aheadMark = "/ahead"

// encodeMarker is a claim marker's value: the jobs whose runs the chunk
// tried, then aheadMark when the chunk was claimed before its instant.
func encodeMarker(jobs []string, ahead bool) string {
	if ahead {
		jobs = append(jobs[:len(jobs):len(jobs)], aheadMark)
	}
	b, _ := json.Marshal(jobs) // strings only: cannot fail
	return string(b)
}

// decodeMarker reads a claim marker's value: the jobs it names and
// whether its chunk is claimed ahead and not started.
func decodeMarker(key string, value []byte) (jobs []string, ahead bool, err error) {
	if err := json.Unmarshal(value, &jobs); err != nil {
		return nil, false, fmt.Errorf("assign: claim marker %s: %w", key, err)
	}
	if n := len(jobs); n > 0 && jobs[n-1] == aheadMark {
		return jobs[:n-1], true, nil
	}
	return jobs, false, nil
}
