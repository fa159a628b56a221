package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/jsonerr"
)

// waitInterval is how often trigger --wait asks about its run: often
// enough that a CI step ends soon after the run, rarely enough that a
// thousand waiting pipelines are no load on a replica.
const waitInterval = 500 * time.Millisecond

// triggerCommand: scheduler trigger JOB [--input JSON|@FILE]
// [--idempotency-key K] [--wait].
func triggerCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var inputArg, key string
	var wait bool
	return clientCommand(ctx, "scheduler trigger JOB [--input JSON|@FILE] [--idempotency-key K] [--wait]", args, stdout, stderr, 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&inputArg, "input", "", "the run's input: a JSON object, or @FILE to read one from a file")
			fs.StringVar(&key, "idempotency-key", "", "`KEY` that makes a repeated trigger answer the first one's run")
			fs.BoolVar(&wait, "wait", false, "follow the run; exit 0 only if it succeeds")
		},
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			input, err := readInput(inputArg)
			if err != nil {
				return err
			}
			tr, err := c.Trigger(ctx, pos[0], input, key)
			if err != nil {
				return err
			}
			if tr.Duplicate {
				// On stderr, so stdout stays the run id a script captures.
				fmt.Fprintf(out.stderr, "scheduler: duplicate trigger: idempotency key %q already made run %s; nothing new started\n", key, tr.RunID)
			}
			if !wait {
				if out.json {
					return writeRaw(out.stdout, tr.Raw)
				}
				_, err := fmt.Fprintln(out.stdout, tr.RunID)
				return err
			}
			if !out.json {
				fmt.Fprintln(out.stdout, tr.RunID)
			}
			run, err := c.Wait(ctx, tr.RunID, waitInterval)
			if err != nil {
				return err
			}
			if out.json {
				if err := writeRaw(out.stdout, run.Raw); err != nil {
					return err
				}
			} else {
				writeOutcome(out.stdout, run)
			}
			if run.Outcome != client.OutcomeSucceeded {
				return errReported
			}
			return nil
		})
}

// readInput turns --input into the JSON object to send: the argument
// itself, or the content of the file after "@". Anything but an object is
// a usage error, caught before the server is asked.
func readInput(arg string) (json.RawMessage, error) {
	if arg == "" {
		return nil, nil
	}
	data, where := []byte(arg), "--input"
	if name, ok := strings.CutPrefix(arg, "@"); ok {
		var err error
		if data, err = os.ReadFile(name); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is in the message already
			}
			return nil, fmt.Errorf("%w: --input %s: cannot read the file: %w", errUsage, arg, err)
		}
		where = "--input " + arg
	}
	var b bytes.Buffer
	var doc json.RawMessage // Unmarshal's error has the position of the mistake; Compact's does not
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s %s; give a JSON object, e.g. --input '{\"k\": \"v\"}'", errUsage, where, jsonerr.Describe(err))
	}
	if err := json.Compact(&b, doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errUsage, where, err) // valid JSON always compacts
	}
	if b.Len() == 0 || b.Bytes()[0] != '{' {
		return nil, fmt.Errorf("%w: %s must be a JSON object, got %s", errUsage, where, cut(b.String(), 40))
	}
	return b.Bytes(), nil
}

// writeOutcome tells how a run ended, as a sentence ("ok@…: succeeded
// (HTTP 200) on replica a after 1.2s"), and the tail of its output (the
// record keeps the last 4 KiB).
func writeOutcome(w io.Writer, r client.Run) {
	fmt.Fprintf(w, "%s: %s", r.RunID, strings.ReplaceAll(string(r.Outcome), "_", " "))
	switch {
	case r.ExitCode != nil:
		fmt.Fprintf(w, " (exit code %d)", *r.ExitCode)
	case r.HTTPStatus != 0:
		fmt.Fprintf(w, " (HTTP %d)", r.HTTPStatus)
	}
	if r.Holder != "" {
		fmt.Fprintf(w, " on replica %s", r.Holder)
	}
	if d := took(r.StartedAt, r.EndedAt); d != "-" {
		fmt.Fprintf(w, " after %s", d)
	}
	fmt.Fprintln(w)
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	if r.Output != "" {
		fmt.Fprintln(w, "output (tail):")
		fmt.Fprint(w, r.Output)
		if !strings.HasSuffix(r.Output, "\n") {
			fmt.Fprintln(w)
		}
	}
}
