package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/etcdsched/scheduler/internal/keys"
)

// eventKinds are the scrape names of scheduler_watch_events_total's
// series, one per kind of key.
func eventKinds() []string {
	var out []string
	for _, k := range keys.Kinds() {
		out = append(out, eventKind(k))
	}
	return out
}

func eventKind(kind string) string { return fmt.Sprintf("%s{kind=%q}", watchEvents, kind) }

// eventsByKind is the events of each kind in the counters' deltas d,
// divided by per (replicas × runs); kinds with none are left out.
func eventsByKind(d map[string]float64, per float64) map[string]float64 {
	out := map[string]float64{}
	for _, k := range keys.Kinds() {
		if v := d[eventKind(k)]; v > 0 {
			out[k] = v / per
		}
	}
	return out
}

// kindsOf lists byKind largest first (" (slots 2.01, assign 0.40, ...)"),
// or nothing when it is empty: a replica before the kinds were counted.
func kindsOf(byKind map[string]float64) string {
	if len(byKind) == 0 {
		return ""
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		return cmp.Or(cmp.Compare(byKind[b], byKind[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.2f", k, byKind[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
