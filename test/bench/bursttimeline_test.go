package main

import (
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// A step's timeline has each due second of the window: its ticks due, the
// first arrivals of those delivered (a duplicate does not count twice) and
// their lateness; a second nothing arrived for says so.
func TestTimelineHasEachDueSecond(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	to := from.Add(3 * time.Second)
	run := func(job string, due time.Time, late time.Duration) cluster.Run {
		return cluster.Run{Job: job, ScheduledAt: due, Start: due.Add(late)}
	}
	all := []cluster.Run{
		run("b1-00000", from, 10*time.Millisecond),
		run("b1-00001", from, 30*time.Millisecond),
		run("b1-00001", from, 900*time.Millisecond), // a duplicate
		run("b1-00000", from.Add(time.Second), 2*time.Second),
		run("b1-00000", from.Add(3*time.Second), 0), // after the window
	}
	tl := tallyBurst(all, "b1-", 2, from, to, to.Add(10*time.Second))
	secs := timeline(tl.bySecond, 2, from, to)
	if len(secs) != 3 {
		t.Fatalf("%d seconds, want 3: %+v", len(secs), secs)
	}
	want := []struct {
		delivered int
		p99       float64
	}{{2, 30}, {1, 2000}, {0, 0}}
	for i, w := range want {
		s := secs[i]
		if !s.At.Equal(from.Add(time.Duration(i)*time.Second)) || s.Due != 2 || s.Delivered != w.delivered || s.Lateness.P99 != w.p99 {
			t.Errorf("second %d: %+v, want due 2, delivered %d, p99 %.0f ms", i, s, w.delivered, w.p99)
		}
	}
	if note := timelineNote(secs); note != "by due second (s delivered p50/p99 ms): 00 100.0% 10/30, 01 50.0% 2000/2000, 02 0.0% 0/0" {
		t.Errorf("note %q", note)
	}
}

// A member's fsyncs and commits over 64 ms are its count less its 64 ms
// bucket (over a second, less its 1.024 s bucket), from etcd's metric
// text, summed over the members.
func TestSlowDiskIsCountedFromTheBuckets(t *testing.T) {
	const member = `# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.032"} 90
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.064"} 97
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.128"} 98
etcd_disk_wal_fsync_duration_seconds_bucket{le="1.024"} 99
etcd_disk_wal_fsync_duration_seconds_count 100
etcd_disk_backend_commit_duration_seconds_bucket{le="0.064"} 50
etcd_disk_backend_commit_duration_seconds_count 51
`
	d := map[string]float64{}
	for range 2 {
		if err := sumMetrics(strings.NewReader(member), []string{walFsyncs, walFsyncsFast, walFsyncsSecond, diskCommits, diskCommitsFast}, d); err != nil {
			t.Fatal(err)
		}
	}
	var s burstSide
	s.Seconds = 20
	s.apply(burstTally{}, d, 2)
	if s.SlowFsyncs != 6 || s.SlowCommits != 2 || s.StalledFsyncs != 2 {
		t.Errorf("slow fsyncs %v (over 1 s %v), commits %v; want 6 (2) and 2 (two members)", s.SlowFsyncs, s.StalledFsyncs, s.SlowCommits)
	}
}
