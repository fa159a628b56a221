package config

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// After chains a job to another: when a run of Job ends with one of On, a
// run of this job is queued in the same transaction (docs/notify.md#chains).
type After struct {
	Job string   `yaml:"job" json:"job"`
	On  []string `yaml:"on" json:"on"`
}

func (a *After) setDefaults() { a.On = []string{"succeeded"} }

func (c *Config) validateChains(p *problems) {
	index := map[string]int{}
	for i := range c.Jobs {
		index[c.Jobs[i].Name] = i
	}
	for i := range c.Jobs {
		a := c.Jobs[i].After
		if a == nil {
			continue
		}
		path := fmt.Sprintf("jobs[%d].after", i)
		switch _, ok := index[a.Job]; {
		case a.Job == "":
			p.add(path+".job", "required")
		case !ok:
			p.add(path+".job", "unknown job %q", a.Job)
		}
		if len(a.On) == 0 {
			p.add(path+".on", "must not be empty")
		}
		for k, o := range a.On {
			if !slices.Contains(Outcomes, o) {
				p.add(fmt.Sprintf("%s.on[%d]", path, k), "unknown outcome %q: want one of %s", o, strings.Join(Outcomes, ", "))
			}
		}
	}
	// Each job follows at most one other, so a cycle is a walk that comes
	// back. It is reported once, at the first of its jobs in the file.
	reported := map[int]bool{}
	for i := range c.Jobs {
		walk := []int{i}
		for at := i; ; {
			a := c.Jobs[at].After
			if a == nil {
				break
			}
			next, ok := index[a.Job]
			if !ok || reported[next] {
				break
			}
			if k := slices.Index(walk, next); k >= 0 {
				first := slices.Min(walk[k:])
				names := []string{c.Jobs[first].Name}
				for j := index[c.Jobs[first].After.Job]; ; j = index[c.Jobs[j].After.Job] {
					reported[j] = true
					names = append(names, c.Jobs[j].Name)
					if j == first {
						break
					}
				}
				p.add(fmt.Sprintf("jobs[%d].after.job", first), "cycle of after: %s", strings.Join(names, " -> "))
				break
			}
			walk = append(walk, next)
			at = next
		}
	}
}

// chainIndex is the downstream jobs of each job in one config, built once
// per config: a release looks its job up on every run's end.
type chainIndex struct {
	cfg  *Config
	down map[string][]*Job
}

var chains atomic.Pointer[chainIndex]

// Downstream are the jobs chained after job (whatever their outcomes).
func (c *Config) Downstream(job string) []*Job {
	idx := chains.Load()
	if idx == nil || idx.cfg != c {
		idx = &chainIndex{cfg: c, down: map[string][]*Job{}}
		for i := range c.Jobs {
			if a := c.Jobs[i].After; a != nil {
				idx.down[a.Job] = append(idx.down[a.Job], &c.Jobs[i])
			}
		}
		chains.Store(idx)
	}
	return idx.down[job]
}
