package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"

	"github.com/etcdsched/scheduler/client"
)

// output is where and how a client command answers.
type output struct {
	stdout, stderr io.Writer
	json           bool // the API's JSON rather than a table
	view           view // how tables are laid out
}

// errReported: the command said why it failed already; exit 1 and say no
// more (a run that did not succeed, for trigger --wait).
var errReported = errors.New("reported")

// clientCommand is the frame of every command that talks to the API:
// flags (the shared ones plus those extra adds), between min and max
// positional arguments, a client, then body. Usage errors exit 2, the rest 1.
func clientCommand(ctx context.Context, synopsis string, args []string, stdout, stderr io.Writer, min, max int,
	extra func(*flag.FlagSet), body func(ctx context.Context, c *client.Client, pos []string, out output) error) int {
	var f clientFlags
	fs := flag.NewFlagSet(synopsis, flag.ContinueOnError)
	f.register(fs)
	if extra != nil {
		extra(fs)
	}
	pos, err := parseInterleaved(fs, args, stdout, clientEnv, min, max)
	if err != nil {
		return usageError(stderr, err)
	}
	c, err := f.newClient()
	if err != nil {
		return usageError(stderr, err)
	}
	defer c.CloseIdleConnections()
	err = body(ctx, c, pos, output{stdout: stdout, stderr: stderr, json: f.json(), view: viewOf(stdout, f.output == "wide")})
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		return usageError(stderr, err)
	case errors.Is(err, errReported):
		return exitFail
	default:
		return apiFailed(stderr, err, f.tokenFile)
	}
}

// readCommand is the frame of a command without arguments that reads one
// answer: -o json prints the API's own JSON (raw), anything else what show
// makes of the answer.
func readCommand[T any](ctx context.Context, synopsis string, args []string, stdout, stderr io.Writer,
	read func(*client.Client, context.Context) (T, error), raw func(T) any, show func(output, T) error) int {
	return clientCommand(ctx, synopsis, args, stdout, stderr, 0, 0, nil,
		func(ctx context.Context, c *client.Client, _ []string, out output) error {
			v, err := read(c, ctx)
			if err != nil {
				return err
			}
			if out.json {
				return writeRaw(out.stdout, raw(v))
			}
			return show(out, v)
		})
}

// raws lists the answers' own JSON, for -o json of a list.
func raws[T any](list []T, raw func(T) json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(list))
	for _, v := range list {
		out = append(out, raw(v))
	}
	return out
}
