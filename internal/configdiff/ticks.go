package configdiff

import (
	"time"

	"github.com/etcdsched/scheduler/config"
)

// shown is how many instants of each kind a report lists.
const shown = 5

// maxTicks bounds the ticks of one job a comparison computes: a job at
// "@every 1s" has 604,800 in a week.
const maxTicks = 700_000

// Ticks are the ticks of the window that a change makes appear, disappear
// or move, with the first few of each. A tick gone and one new are paired
// in order as a move: the k-th tick gone moved to the k-th tick new.
type Ticks struct {
	Appear     int         `json:"appear"`
	Disappear  int         `json:"disappear"`
	Move       int         `json:"move"`
	Appears    []time.Time `json:"appears,omitempty"`
	Disappears []time.Time `json:"disappears,omitempty"`
	Moves      []Move      `json:"moves,omitempty"`
	// Truncated: a side had more than maxTicks ticks; the rest were not
	// compared.
	Truncated bool `json:"truncated,omitempty"`
}

// Move is one tick that moves, each instant in its version's time zone.
type Move struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Empty says whether no tick changes.
func (t *Ticks) Empty() bool { return t == nil || t.Appear+t.Disappear+t.Move == 0 }

// compareTicks compares the ticks in [from, to) of two versions of a job;
// nil stands for a job that is not there.
func compareTicks(old, cur *config.Job, from, to time.Time) *Ticks {
	o, otrunc := ticksOf(old, from, to)
	c, ctrunc := ticksOf(cur, from, to)
	var gone, come []time.Time
	i, k := 0, 0
	for i < len(o) || k < len(c) {
		switch {
		case k == len(c) || (i < len(o) && o[i].Before(c[k])):
			gone = append(gone, o[i])
			i++
		case i == len(o) || c[k].Before(o[i]):
			come = append(come, c[k])
			k++
		default:
			i++
			k++
		}
	}
	t := &Ticks{Truncated: otrunc || ctrunc}
	t.Move = min(len(gone), len(come))
	for n := range min(t.Move, shown) {
		t.Moves = append(t.Moves, Move{From: gone[n], To: come[n]})
	}
	gone, come = gone[t.Move:], come[t.Move:]
	t.Disappear, t.Appear = len(gone), len(come)
	t.Disappears = gone[:min(len(gone), shown)]
	t.Appears = come[:min(len(come), shown)]
	if t.Empty() && !t.Truncated {
		return nil
	}
	return t
}

// ticksOf lists the job's ticks after from and before to, in its time
// zone, after exclusions and start_at/end_at: what the leader would plan.
// A job paused in the file plans none.
func ticksOf(j *config.Job, from, to time.Time) ([]time.Time, bool) {
	if j == nil || j.Paused {
		return nil, false
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return nil, false
	}
	loc := j.Location()
	var out []time.Time
	for t := sched.Next(from); !t.IsZero() && t.Before(to); t = sched.Next(t) {
		if len(out) == maxTicks {
			return out, true
		}
		out = append(out, t.In(loc))
	}
	return out, false
}
