package main

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/client"
)

// slotsCommand: scheduler slots. The API lists held slots and rate
// windows in one list; people get two tables, the slots and then the
// windows, since a window has none of a slot's columns.
func slotsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return readCommand(ctx, "scheduler slots", args, stdout, stderr, (*client.Client).Slots,
		func(list []client.Slot) any {
			return raws(list, func(s client.Slot) json.RawMessage { return s.Raw })
		},
		writeSlots)
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
// KEY the concurrency key when any slot has one; -o wide adds the job and
// resource apart, the fencing token and the times.
func heldTable(v view, held []client.Slot) *table {
	keyed := false
	for _, s := range held {
		keyed = keyed || s.ConcurrencyKey != ""
	}
	header := []string{"SLOT", "KEY", "RUN ID", "HOLDER", "JOB", "RESOURCE", "FENCING TOKEN", "SCHEDULED AT", "STARTED AT"}
	t := newTable(v, header...).shrink(1, 3).wide(4, 5, 6, 7, 8)
	if !keyed {
		t.wide(1)
	}
	for _, s := range held {
		slot := strconv.Itoa(s.Slot.Slot)
		if s.Resource != "" {
			slot = s.Resource + "/" + slot
		}
		t.add(slot, s.ConcurrencyKey, s.RunID, s.Holder, s.Job, s.Resource,
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
