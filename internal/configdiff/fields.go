package configdiff

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// flatten writes v as JSON and lists its leaves by path ("retries.max",
// "exclude[0].cron"): objects by key, lists of objects by index, and a
// list of plain values as one value, so that a command line or a list of
// schedules reads as one change.
func flatten(v any) map[string]string {
	out := map[string]string{}
	b, err := json.Marshal(v)
	if err != nil {
		// Config values always encode; say so rather than hide a change.
		out[""] = "unencodable: " + err.Error()
		return out
	}
	var tree any
	_ = json.Unmarshal(b, &tree)
	walk(out, "", tree)
	return out
}

func walk(out map[string]string, path string, v any) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			out[path] = "{}"
		}
		for k, x := range v {
			walk(out, join(k), x)
		}
	case []any:
		if len(v) > 0 && !slices.ContainsFunc(v, func(x any) bool { _, ok := x.(map[string]any); return !ok }) {
			for i, x := range v {
				walk(out, fmt.Sprintf("%s[%d]", path, i), x)
			}
			return
		}
		b, _ := json.Marshal(v)
		out[path] = string(b)
	default:
		b, _ := json.Marshal(v)
		out[path] = string(b)
	}
}

// calendarDates are the dates a job's exclusion copies from its calendar:
// a calendar's change shows once, under the calendar.
var calendarDates = regexp.MustCompile(`^exclude\[\d+\]\.dates$`)

// secretField says whether a field of a job or sink holds a secret value
// (config.Job.Redacted): its values are never shown.
func secretField(path string) bool {
	return strings.HasPrefix(path, "http.headers.") || strings.HasPrefix(path, "exec.env.") || strings.HasPrefix(path, "headers.")
}

// compareFields lists the paths whose values differ, by path.
func compareFields(old, cur map[string]string) []Field {
	var out []Field
	for p, ov := range old {
		nv, ok := cur[p]
		switch {
		case calendarDates.MatchString(p):
		case !ok:
			out = append(out, Field{Path: p, Change: Removed, Old: ov})
		case ov != nv:
			out = append(out, Field{Path: p, Change: Changed, Old: ov, New: nv})
		}
	}
	for p, nv := range cur {
		if _, ok := old[p]; !ok && !calendarDates.MatchString(p) {
			out = append(out, Field{Path: p, Change: Added, New: nv})
		}
	}
	for i := range out {
		if secretField(out[i].Path) {
			out[i].Old, out[i].New, out[i].Secret = "", "", true
		}
	}
	slices.SortFunc(out, func(a, b Field) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// secretChanges compares two sides' fingerprints: path -> change, for the
// paths whose value differs (a secret added or removed shows as a field
// added or removed too; the fingerprints also cover sinks' headers, which
// have no field).
func secretChanges(old, cur map[string]string) map[string]string {
	out := map[string]string{}
	if old == nil {
		return out
	}
	for p, o := range old {
		n, ok := cur[p]
		switch {
		case !ok:
			out[p] = Removed
		case n != o:
			out[p] = Changed
		}
	}
	for p := range cur {
		if _, ok := old[p]; !ok {
			out[p] = Added
		}
	}
	return out
}

// withSecrets merges the secret changes under prefix into fields.
func withSecrets(fields []Field, secrets map[string]string, prefix string) []Field {
	have := map[string]bool{}
	for _, f := range fields {
		have[f.Path] = true
	}
	for p, change := range secrets {
		rel, ok := strings.CutPrefix(p, prefix)
		if !ok || have[rel] {
			continue
		}
		fields = append(fields, Field{Path: rel, Change: change, Secret: true})
	}
	slices.SortFunc(fields, func(a, b Field) int { return cmp.Compare(a.Path, b.Path) })
	return fields
}

// compareNamed compares two lists of named things (resources, calendars,
// sinks) by name.
func compareNamed[T any](kind string, old, cur []T, name func(T) string, secrets map[string]string) []Item {
	byName := func(list []T) map[string]T {
		m := make(map[string]T, len(list))
		for _, x := range list {
			m[name(x)] = x
		}
		return m
	}
	om, cm := byName(old), byName(cur)
	names := slices.Sorted(maps.Keys(om))
	for n := range cm {
		if _, ok := om[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []Item
	for _, n := range names {
		o, inOld := om[n]
		c, inCur := cm[n]
		switch {
		case !inCur:
			out = append(out, Item{Kind: kind, Name: n, Change: Removed})
		case !inOld:
			out = append(out, Item{Kind: kind, Name: n, Change: Added})
		default:
			fields := compareFields(flatten(o), flatten(c))
			if secrets != nil {
				fields = withSecrets(fields, secrets, "notify.sinks."+n+".")
			}
			if len(fields) > 0 {
				out = append(out, Item{Kind: kind, Name: n, Change: Changed, Fields: fields})
			}
		}
	}
	return out
}
