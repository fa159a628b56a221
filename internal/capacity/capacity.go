// Package capacity estimates what a scheduler config asks of a cluster
// over a window (docs/operations.md, "Jobs as code"): the runs due in the
// busiest whole second and the jobs due then, the mean, the keys the runs
// of that second hold, the keys and bytes history keeps at steady state,
// and which jobs a jitter would spread.
package capacity

import (
	"errors"
	"slices"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// RecordBytes estimates what one finished-run record costs etcd: its key,
// a record without output (about 400 bytes of JSON) and etcd's own
// bookkeeping. A run's output adds its own length.
const RecordBytes = 600

// jobKeys are the keys a job keeps whatever its runs: its cursor and its
// spec.
const jobKeys = 2

// maxTicks bounds the ticks of one job in a window (a job at "@every 1s"
// has 604,800 in a week).
const maxTicks = 1_000_000

// Report is the estimate.
type Report struct {
	From   time.Time `json:"from"`
	Window string    `json:"window"`
	// Runs are the runs due in the window, a sharded job's shards each.
	Runs int     `json:"runs"`
	Mean float64 `json:"mean_per_second"`
	Peak Peak    `json:"peak"`
	// HistoryKeys and HistoryBytes are what history and the jobs' own
	// keys hold once every job has its history_limit of records.
	HistoryKeys  int   `json:"history_keys"`
	HistoryBytes int64 `json:"history_bytes"`
	// Spread are the jobs due at the peak without jitter, whose jitter
	// would spread it.
	Spread []string `json:"spread,omitempty"`
	// Truncated names jobs with more than maxTicks ticks in the window;
	// only the first were counted.
	Truncated []string `json:"truncated,omitempty"`
}

// Peak is the whole second of the window with the most runs due.
type Peak struct {
	At   time.Time `json:"at"`
	Runs int       `json:"runs"`
	// Jobs are the jobs due in that second, by name.
	Jobs []string `json:"jobs"`
	// Keys are the slot and lease-bound keys those runs take when they
	// start: one slot each, and one per resource they name.
	Keys int `json:"keys"`
}

// Estimate counts cfg's runs due in [from, from+window), each at its tick
// plus the job's jitter (the time the leader lets it start).
func Estimate(cfg *config.Config, from time.Time, window time.Duration) (Report, error) {
	if window < time.Second {
		return Report{}, errors.New("capacity: the window must be a second or more")
	}
	to := from.Add(window)
	rep := Report{From: from.UTC(), Window: windowText(window)}
	perSecond := map[int64]int{}
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		n := 0
		truncated := dues(j, from, to, func(at time.Time) {
			perSecond[at.Unix()] += runsPerTick(j)
			n++
		})
		rep.Runs += n * runsPerTick(j)
		rep.HistoryKeys += jobKeys + (j.HistoryLimit+j.SkippedHistoryLimit)*runsPerTick(j)
		if truncated {
			rep.Truncated = append(rep.Truncated, j.Name)
		}
	}
	rep.HistoryBytes = int64(rep.HistoryKeys) * RecordBytes
	rep.Mean = float64(rep.Runs) / window.Seconds()
	var peak int64
	for s, n := range perSecond {
		if n > rep.Peak.Runs || (n == rep.Peak.Runs && s < peak) {
			peak, rep.Peak.Runs = s, n
		}
	}
	if rep.Peak.Runs == 0 {
		return rep, nil
	}
	rep.Peak.At = time.Unix(peak, 0).UTC()
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		due := false
		dues(j, rep.Peak.At, rep.Peak.At.Add(time.Second), func(at time.Time) {
			if at.Unix() == peak {
				due = true
			}
		})
		if !due {
			continue
		}
		rep.Peak.Jobs = append(rep.Peak.Jobs, j.Name)
		rep.Peak.Keys += runsPerTick(j) * (1 + len(j.Resources))
		if j.Jitter == 0 {
			rep.Spread = append(rep.Spread, j.Name)
		}
	}
	slices.Sort(rep.Peak.Jobs)
	slices.Sort(rep.Spread)
	return rep, nil
}

// dues calls f with the due time of each of the job's ticks whose due
// time falls in [from, to): its tick plus its jitter. A tick up to the
// jitter before from may be due after it. A job paused in the file has
// none. It reports whether it stopped at maxTicks.
func dues(j *config.Job, from, to time.Time, f func(time.Time)) bool {
	if j.Paused {
		return false
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return false
	}
	n := 0
	for t := sched.Next(from.Add(-j.Jitter.D() - time.Nanosecond)); !t.IsZero() && t.Before(to); t = sched.Next(t) {
		if n++; n > maxTicks {
			return true
		}
		if at := t.Add(j.JitterAt(t)); !at.Before(from) && at.Before(to) {
			f(at)
		}
	}
	return false
}

// runsPerTick is how many runs a tick of the job makes: one a shard.
func runsPerTick(j *config.Job) int { return max(1, j.Shards) }

func windowText(d time.Duration) string {
	s := d.String()
	if len(s) > 3 && s[len(s)-3:] == "m0s" {
		s = s[:len(s)-2]
	}
	if len(s) > 3 && s[len(s)-3:] == "h0m" {
		s = s[:len(s)-2]
	}
	return s
}
