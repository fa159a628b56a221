package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/client"
)

// slotsCommand: scheduler slots. The API lists held slots and rate
// windows in one list; people get two tables, the slots and then the
// windows, since a window has none of a slot's columns.
func slotsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var team string
	return clientCommand(ctx, "scheduler slots [--team TEAM]", args, stdout, stderr, 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&team, "team", "", "only the slots of `TEAM`'s jobs (docs/configuration.md, \"Teams and tokens\")")
		},
		func(ctx context.Context, c *client.Client, _ []string, out output) error {
			list, err := c.Slots(ctx)
			if err != nil {
				return err
			}
			if team != "" {
				list = slices.DeleteFunc(list, func(s client.Slot) bool { return s.Window != nil || s.Team != team })
			}
			if out.json {
				return writeRaw(out.stdout, raws(list, func(s client.Slot) json.RawMessage { return s.Raw }))
			}
			return writeSlots(out, list)
		})
}

// writeSlots prints the held slots, then the windows when there are any.
func writeSlots(out output, list []client.Slot) error {
	var held, windows []client.Slot
	for _, s := range list {
		if s.Window != nil {
			windows = append(windows, s)
		} else {
			held = append(held, s)
		}
	}
	if len(held) > 0 || len(windows) == 0 {
		if err := heldTable(out.view, held).write(out.stdout); err != nil {
			return err
		}
	}
	if len(windows) == 0 {
		return nil
	}
	if len(held) > 0 {
		if _, err := io.WriteString(out.stdout, "\n"); err != nil {
			return err
		}
	}
	return windowsTable(out.view, windows).write(out.stdout)
}

// heldTable lists held slots. The run id names the job, so by default
// SLOT says which slot (a job's index, or a resource's name/index),
// KEY the concurrency key when any slot has one, TEAM the job's team when
// any slot has one; -o wide adds the job and
// resource apart, the fencing token and the times.
func heldTable(v view, held []client.Slot) *table {
	keyed, teamed := false, false
	for _, s := range held {
		keyed = keyed || s.ConcurrencyKey != ""
		teamed = teamed || s.Team != ""
	}
	header := []string{"SLOT", "KEY", "RUN ID", "HOLDER", "JOB", "TEAM", "RESOURCE", "FENCING TOKEN", "SCHEDULED AT", "STARTED AT"}
	t := newTable(v, header...).shrink(1, 3).wide(4, 6, 7, 8, 9)
	if !keyed {
		t.wide(1)
	}
	if !teamed {
		t.wide(5)
	}
	for _, s := range held {
		slot := strconv.Itoa(s.Slot.Slot)
		if s.Resource != "" {
			slot = s.Resource + "/" + slot
		}
		t.add(slot, s.ConcurrencyKey, s.RunID, s.Holder, s.Job, cellOr(s.Team), s.Resource,
			strconv.FormatInt(s.FencingToken, 10), stamp(s.ScheduledAt), stamp(s.StartedAt))
	}
	return t
}

// windowsTable lists rate windows: which, the limit, how many starts it
// still counts and since when.
func windowsTable(v view, windows []client.Slot) *table {
	t := newTable(v, "WINDOW", "COUNT/PER", "IN USE", "OLDEST")
	for _, s := range windows {
		w := s.Window
		t.add(w.Window, strconv.Itoa(w.Count)+"/"+shortDuration(w.Per), strconv.Itoa(w.InUse), stamp(w.Oldest))
	}
	return t
}

// shortDuration drops the zero units Go's Duration.String writes: "1m"
// for "1m0s", "1h" for "1h0m0s". Anything else is left as it came.
func shortDuration(s string) string {
	if _, err := time.ParseDuration(s); err != nil {
		return s
	}
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
