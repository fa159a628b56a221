package backfill

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Each tick of the range lands in the list its place at the read revision
// says: with a record, an entry, or named by an assignment (the lean
// protocol's claimed or about to be claimed run, which has neither) it
// exists; after the cursor it is the schedule's; the rest is queued, with
// trigger backfill, due at its tick, caught up, and its spec written.
func TestBackfillQueuesOnlyTicksNeverAuthorized(t *testing.T) {
	e := newEnv(t)
	e.cursor(hour(10))
	e.put(layout.Record("report", id(hour(6))), `{}`)
	e.put(layout.Entry("report", id(hour(7))), queue.NewEntry(id(hour(7)), &e.job, nil, hour(7), hour(7), 1, runs.Schedule).Encode())
	e.assignment("w1.a", hour(8), "other", "report")
	e.assignment("w2.b", hour(9), "other") // names another job only

	res, err := e.run(hour(6), hour(12))
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Job: "report", From: hour(6), To: hour(12),
		Queued:          []string{id(hour(9)), id(hour(10))},
		SkippedExisting: []string{id(hour(6)), id(hour(7)), id(hour(8))},
		LeftToSchedule:  []string{id(hour(11))},
	}
	if !equal(res, want) {
		t.Fatalf("backfill answered\n%+v\nwant\n%+v", res, want)
	}
	for _, h := range []int{9, 10} {
		q := e.entry(id(hour(h)))
		if q == nil {
			t.Fatalf("no entry for %s", id(hour(h)))
		}
		if q.Trigger != runs.Backfill || !q.CatchUp || !q.NotBefore.Equal(hour(h)) || !q.ScheduledAt.Equal(hour(h)) || q.Attempt != 1 {
			t.Errorf("entry %s: trigger %s, catch_up %v, not_before %s, scheduled_at %s, attempt %d; want backfill, true, its tick, its tick, 1",
				q.RunID, q.Trigger, q.CatchUp, q.NotBefore, q.ScheduledAt, q.Attempt)
		}
		spec, err := e.cli.Get(e.ctx(), q.SpecKey(layout))
		if err != nil || len(spec.Kvs) != 1 {
			t.Errorf("spec %s of %s not written: %v", q.SpecKey(layout), q.RunID, err)
		}
	}
	if q := e.entry(id(hour(8))); q != nil {
		t.Errorf("the assigned tick %s was queued as well", q.RunID)
	}

	again, err := e.run(hour(6), hour(12))
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Queued) != 0 || len(again.SkippedExisting) != 5 {
		t.Errorf("a repeated backfill queued %v and found %v existing; want nothing queued, 5 existing", again.Queued, again.SkippedExisting)
	}
}

// Two backfills that read the same revision both find a tick free; the
// nested compare lets one write it, and the other reports it existing.
func TestConcurrentBackfillsWriteEachTickOnce(t *testing.T) {
	e := newEnv(t)
	e.cursor(hour(12))
	ts, _ := ticks(mustSchedule(t, e), hour(0), hour(12), MaxTicks)
	var plans []plan
	for range 2 {
		s, err := e.b.read(e.ctx(), "report", hour(0), hour(12))
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, s.classify("report", ts))
	}
	var written [][]string
	for _, p := range plans {
		var entries []*queue.Entry
		for _, tick := range p.queue {
			q := queue.NewEntry(id(tick), &e.job, nil, tick, tick, 1, runs.Backfill)
			entries = append(entries, q)
		}
		w, existing, err := e.b.write(e.ctx(), entries)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, w)
		if len(w)+len(existing) != 12 {
			t.Fatalf("written %d and existing %d, want 12 in all", len(w), len(existing))
		}
	}
	if len(written[0]) != 12 || len(written[1]) != 0 {
		t.Errorf("the first backfill wrote %d ticks, the second %d; want 12 and 0 (each tick once)", len(written[0]), len(written[1]))
	}
}

// A range that is not a past range, or holds more than MaxTicks ticks, is
// refused with a sentence that says what to do; a job no leader took up
// yet is refused too. Exactly MaxTicks ticks are taken.
func TestBackfillRefusals(t *testing.T) {
	e := newEnv(t)
	e.job.Schedule = "@every 1s"
	for _, c := range []struct {
		name     string
		from, to time.Time
		kind     error
		want     string
	}{
		{"to in the future", hour(11), now.Add(time.Minute), ErrBadRange,
			`job "report": to 2026-11-25T12:31:00Z is in the future (now 2026-11-25T12:30:00Z): backfill is for past ticks; future ones are the schedule's`},
		{"from equals to", hour(11), hour(11), ErrBadRange,
			`job "report": from 2026-11-25T11:00:00Z is not before to 2026-11-25T11:00:00Z; give a range whose from comes first`},
		{"from after to", hour(11), hour(10), ErrBadRange, "is not before to"},
		{"10,001 ticks", hour(9), hour(9).Add(10_001 * time.Second), ErrTooManyTicks,
			`job "report" has more than 10000 ticks from 2026-11-25T09:00:00Z to 2026-11-25T11:46:41Z; backfill at most 10000 a request, e.g. to 2026-11-25T11:46:40Z`},
		{"not scheduled yet", hour(9), hour(10), ErrNotScheduled, "has not been scheduled by a leader yet"},
	} {
		_, err := e.run(c.from, c.to)
		if !errors.Is(err, c.kind) || !strings.Contains(userMessage(err), c.want) {
			t.Errorf("%s: got %v; want %v saying %q", c.name, err, c.kind, c.want)
		}
	}
	e.cursor(hour(12))
	res, err := e.run(hour(9), hour(9).Add(MaxTicks*time.Second))
	if err != nil || len(res.Queued) != MaxTicks {
		t.Errorf("exactly %d ticks: queued %d, %v", MaxTicks, len(res.Queued), err)
	}
}

func userMessage(err error) string {
	var r interface{ UserMessage() string }
	if errors.As(err, &r) {
		return r.UserMessage()
	}
	return ""
}

func equal(a, b Result) bool {
	return a.Job == b.Job && a.From.Equal(b.From) && a.To.Equal(b.To) &&
		slices.Equal(a.Queued, b.Queued) && slices.Equal(a.SkippedExisting, b.SkippedExisting) && slices.Equal(a.LeftToSchedule, b.LeftToSchedule)
}

// The ticks of a range are the job's parsed schedule's: several schedules
// are one tick per instant, exclusions and start_at leave theirs out.
func TestBackfillCoversTheScheduleAfterExclusions(t *testing.T) {
	e := newEnv(t)
	e.cursor(hour(12))
	e.job.Schedule = ""
	e.job.Schedules = []string{"0 * * * *", "0 */2 * * *"}
	e.job.StartAt = hour(3).Format(time.RFC3339)
	e.job.Exclude = []config.Exclude{{From: hour(5).Format(time.RFC3339), To: hour(7).Format(time.RFC3339)}}
	res, err := e.run(hour(0), hour(10))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{id(hour(3)), id(hour(4)), id(hour(7)), id(hour(8)), id(hour(9))}
	if !slices.Equal(res.Queued, want) {
		t.Errorf("queued %v, want %v", res.Queued, want)
	}
}
