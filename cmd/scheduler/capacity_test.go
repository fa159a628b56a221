package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// manyHourly is a config of n jobs at the top of every hour.
func manyHourly(t *testing.T, n int, jitter string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("jobs:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: job-%04d, schedule: \"0 * * * *\", jitter: %s, exec: {command: [/bin/true]}}\n", i, jitter)
	}
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var capacityNow = time.Date(2026, 11, 28, 0, 0, 30, 0, time.UTC)

func TestCapacityPeakAndHint(t *testing.T) {
	path := manyHourly(t, 3000, "0s")
	var stdout, stderr bytes.Buffer
	code := validateCommand([]string{"--config", path, "--capacity", "--window", "24h", "--max-peak", "500"}, &stdout, &stderr, capacityNow)
	out := stdout.String()
	if code != exitDiffers || !strings.Contains(stderr.String(), "3000 runs due in one second passes --max-peak 500") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	for _, want := range []string{
		"capacity over the 24h from 2026-11-28T00:00:30Z:\n",
		"  runs due: 72000, a mean of 0.83 a second\n",
		"  peak: 3000 runs due in the second 2026-11-28T01:00:00Z, of 3000 jobs: job-0000, job-0001,\n",
		"  slot and lease-bound keys the peak's runs take: 3000\n",
		"  history at steady state: 366000 keys, about 209.4 MiB",
		"  hint: jitter: 30s on the jobs due at the peak without one would spread their runs over 30 seconds\n" +
			"    (about 100 a second); 3000 jobs: job-0000, job-0001, job-0002, job-0003, job-0004 and 2995 more\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 100 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
	// Without --max-peak the report is all: exit 0.
	stdout.Reset()
	if code := validateCommand([]string{"--config", path, "--capacity", "--window", "24h"}, &stdout, &stderr, capacityNow); code != exitOK {
		t.Errorf("--capacity without --max-peak: exit %d", code)
	}
}

// With jitter: 30s the peak drops; the report's figures are those of a
// count made here, tick by tick, from each job's jitter.
func TestCapacityWithJitter(t *testing.T) {
	path := manyHourly(t, 3000, "30s")
	var stdout, stderr bytes.Buffer
	code := validateCommand([]string{"--config", path, "--capacity", "--window", "24h", "--max-peak", "500"}, &stdout, &stderr, capacityNow)
	if code != exitOK {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The count: every top of the hour after now and within 24h, each
	// job due at it plus its jitter.
	perSecond := map[time.Time][]string{}
	total := 0
	for h := 1; h <= 24; h++ {
		tick := time.Date(2026, 11, 28, h, 0, 0, 0, time.UTC)
		for _, j := range cfg.Jobs {
			due := tick.Add(j.JitterAt(tick)).Truncate(time.Second)
			if due.Before(capacityNow.Add(24 * time.Hour)) {
				perSecond[due] = append(perSecond[due], j.Name)
				total++
			}
		}
	}
	var peakAt time.Time
	for at, jobs := range perSecond {
		if len(jobs) > len(perSecond[peakAt]) || (len(jobs) == len(perSecond[peakAt]) && at.Before(peakAt)) {
			peakAt = at
		}
	}
	peak := perSecond[peakAt]
	slices.Sort(peak)
	if len(peak) >= 3000/10 {
		t.Fatalf("the count finds a peak of %d: jitter spreads nothing", len(peak))
	}
	want := fmt.Sprintf("  runs due: %d, a mean of %.2f a second\n  peak: %d runs due in the second %s, of %d jobs: %s,",
		total, float64(total)/(24*3600), len(peak), peakAt.Format(time.RFC3339), len(peak), strings.Join(peak[:2], ", "))
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("the report:\n%s\nwant it to say:\n%s", stdout.String(), want)
	}
	if strings.Contains(stdout.String(), "hint:") {
		t.Errorf("a hint though every job has jitter:\n%s", stdout.String())
	}
}
