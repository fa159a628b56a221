package pruned

import (
	"slices"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/schedule"
)

var t0 = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

// sec is t0 plus n seconds.
func sec(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

func secs(ns ...int) []time.Time {
	out := make([]time.Time, len(ns))
	for i, n := range ns {
		out[i] = sec(n)
	}
	return out
}

// everySecond is a schedule ticking on every whole second.
func everySecond(t *testing.T) func(time.Time) time.Time {
	s, err := schedule.Parse("@every 1s", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return s.Next
}

func stretches(pairs ...[2]int) Stretches {
	out := Stretches{}
	for _, p := range pairs {
		out = append(out, Stretch{sec(p[0]), sec(p[1])})
	}
	return out
}

// A stretch runs from the deleted ticks over the kept ones next to them,
// and stops where a tick of the schedule has no record (a gap): a tick in
// the gap never ran, and a backfill must still queue it.
func TestGrowRunsOverTheKeptRecordsUpToAGap(t *testing.T) {
	next := everySecond(t)
	for _, tc := range []struct {
		name          string
		have          Stretches
		deleted, kept []time.Time
		want          Stretches
		changed       bool
	}{
		{"deleted and kept in a row", nil, secs(0, 1, 2), secs(3, 4, 5), stretches([2]int{0, 5}), true},
		{"a gap at 4 stops it", nil, secs(0, 1), secs(2, 3, 5, 6), stretches([2]int{0, 3}), true},
		{"a deleted tick beyond a gap is a stretch of its own", nil, secs(0, 7), secs(1, 9), stretches([2]int{0, 1}, [2]int{7, 7}), true},
		{"kept ticks alone are no stretch", nil, secs(5), secs(0, 1, 7, 8), stretches([2]int{5, 5}), true},
		{"every deleted tick covered: no write", stretches([2]int{0, 9}), secs(3, 4), secs(5, 12), stretches([2]int{0, 9}), false},
		{"joins the stretch it continues", stretches([2]int{0, 4}), secs(5, 6), secs(7), stretches([2]int{0, 7}), true},
		{"a gap keeps two stretches apart", stretches([2]int{0, 4}), secs(6), secs(7), stretches([2]int{0, 4}, [2]int{6, 7}), true},
		{"out of order, repeated (shards)", nil, secs(2, 0, 1, 1), secs(3, 3), stretches([2]int{0, 3}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := tc.have.Grow(next, tc.deleted, tc.kept)
			if !slices.Equal(got, tc.want) || changed != tc.changed {
				t.Fatalf("Grow = %v, %v; want %v, %v", got, changed, tc.want, tc.changed)
			}
			for _, d := range tc.deleted {
				if !got.Covers(d) {
					t.Errorf("deleted tick %s not covered by %v", d.Format(time.TimeOnly), got)
				}
			}
		})
	}
}

// A tick of a schedule changed since a stretch was written that has no
// record between two stretches keeps them apart; with no tick between,
// they join.
func TestGrowJoinsStretchesOnlyWhereTheScheduleHasNoTickBetween(t *testing.T) {
	every5, err := schedule.Parse("@every 5s", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := stretches([2]int{0, 5}).Grow(every5.Next, secs(10), nil)
	if want := stretches([2]int{0, 10}); !slices.Equal(got, want) {
		t.Errorf("every 5s, 5 then 10: %v, want %v", got, want)
	}
	got, _ = stretches([2]int{0, 5}).Grow(everySecond(t), secs(10), nil)
	if want := stretches([2]int{0, 5}, [2]int{10, 10}); !slices.Equal(got, want) {
		t.Errorf("every 1s, 5 then 10: %v, want %v", got, want)
	}
}

func TestCoversTheClosedRanges(t *testing.T) {
	s := stretches([2]int{0, 2}, [2]int{5, 5}, [2]int{8, 9})
	for n, want := range map[int]bool{-1: false, 0: true, 1: true, 2: true, 3: false, 5: true, 6: false, 9: true, 10: false} {
		if got := s.Covers(sec(n)); got != want {
			t.Errorf("Covers(%d) = %v, want %v", n, got, want)
		}
	}
	if Stretches(nil).Covers(sec(0)) {
		t.Error("no stretch covers a tick")
	}
}

// Past MaxStretches the oldest join: the ticks between them count as
// existing (a backfill refuses them, reruns none); no tick is dropped.
// Grow gets there with a deleted tick beyond a gap in each round.
func TestGrowBoundsTheStretchesByJoiningTheOldest(t *testing.T) {
	next := everySecond(t)
	var s Stretches
	for i := range MaxStretches + 3 {
		s, _ = s.Grow(next, secs(i*10), nil) // 9 s of ticks with no record between two
	}
	if len(s) != MaxStretches {
		t.Fatalf("%d stretches, want %d", len(s), MaxStretches)
	}
	for i := range MaxStretches + 3 {
		if !s.Covers(sec(i * 10)) {
			t.Errorf("deleted tick %d lost", i*10)
		}
	}
	if !s.Covers(sec(5)) || !s.Covers(sec(25)) || s.Covers(sec(35)) || s.Covers(sec((MaxStretches+2)*10-5)) {
		t.Errorf("want the gaps after the first three ticks joined, the others kept: %v", s[:3])
	}
}

func TestEncodeDecodeRoundTrips(t *testing.T) {
	s := stretches([2]int{0, 2}, [2]int{5, 5})
	s[0].From = s[0].From.Add(123 * time.Millisecond)
	got, err := Decode([]byte(s.Encode()))
	if err != nil || !slices.Equal(got, s) {
		t.Fatalf("Decode(Encode(%v)) = %v, %v", s, got, err)
	}
	for _, bad := range []string{"", "[1]", `[["2026-12-02T04:00:01Z","2026-12-02T04:00:00Z"]]`, `[["x","y"]]`} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
}

func TestAddJoinsOverlapsOnly(t *testing.T) {
	got := stretches([2]int{0, 2}).Add(sec(2), sec(4)).Add(sec(6), sec(7))
	if want := stretches([2]int{0, 4}, [2]int{6, 7}); !slices.Equal(got, want) {
		t.Errorf("Add: %v, want %v", got, want)
	}
}
