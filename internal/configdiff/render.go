package configdiff

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Width is the widest line Render writes: a pull request comment's.
const Width = 100

// Render writes the report for people, every line within Width columns.
func Render(w io.Writer, r Report) {
	if r.Empty() {
		fmt.Fprintln(w, "no differences")
	}
	for _, it := range r.Items {
		if it.Kind == KindSetting {
			fmt.Fprintln(w, "setting "+fieldLine(it.Fields[0], Width-len("setting ")))
			continue
		}
		fmt.Fprintln(w, clip(fmt.Sprintf("%s %s: %s", it.Kind, it.Name, it.Change), Width))
		for _, f := range it.Fields {
			fmt.Fprintln(w, "  "+fieldLine(f, Width-2))
		}
		renderTicks(w, it.Ticks, r.Window)
		if it.Runs != nil {
			wrap(w, fmt.Sprintf("runs now: %d running, %d queued: %s", it.Runs.Running, it.Runs.Queued, it.Runs.Effect), "  ", "    ")
		}
	}
	if !r.SecretsCompared {
		wrap(w, "note: secret values were not compared: the cluster shows their fingerprints only to "+
			"a client that sends the API token (--token-file)", "", "  ")
	}
	if !r.Empty() {
		fmt.Fprintln(w, summary(r))
	}
}

// fieldLine is "path: old -> new", values clipped to fit width; a secret
// shows only its change.
func fieldLine(f Field, width int) string {
	if f.Secret {
		return clip(fmt.Sprintf("%s: %s (secret, value not shown)", f.Path, f.Change), width)
	}
	old, cur := f.Old, f.New
	switch f.Change {
	case Added:
		old = "(none)"
	case Removed:
		cur = "(none)"
	}
	room := max((width-utf8.RuneCountInString(f.Path)-len(": ")-len(" -> "))/2, 8)
	return clip(fmt.Sprintf("%s: %s -> %s", f.Path, clip(old, room), clip(cur, room)), width)
}

func renderTicks(w io.Writer, t *Ticks, window string) {
	if t.Empty() {
		return
	}
	var parts []string
	for _, p := range []struct {
		n    int
		verb string
	}{{t.Appear, "appear"}, {t.Disappear, "disappear"}, {t.Move, "move"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.verb))
		}
	}
	line := fmt.Sprintf("  ticks in the next %s: %s", window, strings.Join(parts, ", "))
	if t.Truncated {
		line += fmt.Sprintf(" (compared the first %d ticks)", maxTicks)
	}
	fmt.Fprintln(w, line)
	for _, m := range t.Moves {
		fmt.Fprintf(w, "    move      %s -> %s (%s)\n", stamp(m.From), stamp(m.To), shift(m.To.Sub(m.From)))
	}
	more(w, t.Move, len(t.Moves), "move")
	for _, a := range t.Appears {
		fmt.Fprintf(w, "    appear    %s\n", stamp(a))
	}
	more(w, t.Appear, len(t.Appears), "appear")
	for _, d := range t.Disappears {
		fmt.Fprintf(w, "    disappear %s\n", stamp(d))
	}
	more(w, t.Disappear, len(t.Disappears), "disappear")
}

func more(w io.Writer, total, listed int, verb string) {
	if total > listed {
		fmt.Fprintf(w, "    … %d more %s\n", total-listed, verb)
	}
}

// stamp is an instant in its job's time zone, with the offset and, away
// from UTC, the zone's abbreviation, so a DST edge reads as one.
func stamp(t time.Time) string {
	if t.Location() == time.UTC {
		return t.Format(time.RFC3339)
	}
	return t.Format("2006-01-02T15:04:05Z07:00 MST")
}

// shift is how far a tick moves, signed: "+2h", "-1h30m".
func shift(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return sign + WindowText(d)
}

// summary counts the items by kind and change.
func summary(r Report) string {
	type key struct{ kind, change string }
	counts := map[key]int{}
	var kinds []string
	for _, it := range r.Items {
		if counts[key{it.Kind, Added}]+counts[key{it.Kind, Removed}]+counts[key{it.Kind, Changed}] == 0 {
			kinds = append(kinds, it.Kind)
		}
		counts[key{it.Kind, it.Change}]++
	}
	var parts []string
	for _, k := range kinds {
		var p []string
		for _, ch := range []string{Added, Removed, Changed} {
			if n := counts[key{k, ch}]; n > 0 {
				p = append(p, fmt.Sprintf("%d %s", n, ch))
			}
		}
		parts = append(parts, k+"s "+strings.Join(p, ", "))
	}
	return "differences: " + strings.Join(parts, "; ")
}

// wrap writes text in lines of at most Width columns, the first indented
// by first and the others by rest.
func wrap(w io.Writer, text, first, rest string) {
	line := first
	for _, word := range strings.Fields(text) {
		if line != first && line != rest && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > Width {
			fmt.Fprintln(w, line)
			line = rest
		}
		if line != first && line != rest {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}

// clip cuts s to n runes, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// WindowText writes a window the way people write it: "168h", "90m".
func WindowText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
