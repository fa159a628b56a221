package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/etcdsched/scheduler/client"
)

// defaultServer is where a client command looks without --server or
// SCHEDULER_SERVER: the default api.listen of a replica on this machine.
const defaultServer = "http://127.0.0.1:8080"

// clientFlags are the flags every command that talks to the API takes.
type clientFlags struct {
	server    string
	tokenFile string
	output    string
}

// clientEnv are the flags read from SCHEDULER_<FLAG> for client commands.
var clientEnv = []string{"server", "token-file"}

func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", defaultServer, "API of any replica: `URL` or HOST:PORT, several separated by commas (env SCHEDULER_SERVER)")
	fs.StringVar(&f.tokenFile, "token-file", "", "`FILE` holding the API bearer token (env SCHEDULER_TOKEN_FILE)")
	fs.StringVar(&f.output, "o", "table", "output: table (for people, fit to the terminal or 100 columns), wide (every column, nothing cut) or json (the API's JSON, for scripts)")
}

// check is the part of validation that needs no network.
func (f *clientFlags) check() error {
	if f.output != "table" && f.output != "wide" && f.output != "json" {
		return fmt.Errorf("%w: -o %q: want table, wide or json", errUsage, f.output)
	}
	return nil
}

// json says whether the output is for scripts.
func (f *clientFlags) json() bool { return f.output == "json" }

// token is the content of --token-file, empty without one.
func (f *clientFlags) token() (string, error) {
	if f.tokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(f.tokenFile)
	if err != nil {
		return "", fmt.Errorf("%w: --token-file %s: %s", errUsage, f.tokenFile, unreadable(err))
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%w: --token-file %s is empty", errUsage, f.tokenFile)
	}
	return tok, nil
}

// newClient builds the API client: a bad URL or an unusable token file is
// a usage error (exit 2), like any input the command line names.
func (f *clientFlags) newClient() (*client.Client, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	var opts []client.Option
	tok, err := f.token()
	if err != nil {
		return nil, err
	}
	if tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	c, err := client.New(serverURL(f.server), opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: --server: %w", errUsage, err)
	}
	return c, nil
}

// serverURL takes --server as people type it: a full URL, or the
// HOST:PORT that api.listen and `scheduler members` show, spoken to over
// plain http (":8080" is this machine); several, separated by commas, are
// tried in turn (package client).
func serverURL(s string) string {
	if strings.Contains(s, ",") {
		parts := strings.Split(s, ",")
		for i, p := range parts {
			parts[i] = serverURL(strings.TrimSpace(p))
		}
		return strings.Join(parts, ",")
	}
	switch {
	case s == "" || strings.Contains(s, "://"):
		return s
	case strings.HasPrefix(s, ":"):
		return "http://127.0.0.1" + s
	}
	return "http://" + s
}

// unreadable says why a file named on the command line cannot be read,
// and what to do, without the system call's wording.
func unreadable(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file: name the file that holds the API token"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied: this user may not read it"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// apiFailed prints why a call to the API failed and returns exit 1: the
// API's own message when it answered, the server's URL when it did not.
// tokenFile is the --token-file the request's token came from, if any.
func apiFailed(stderr io.Writer, err error, tokenFile string) int {
	msg := err.Error()
	if e, ok := client.AsError(err); ok && e.Code == client.CodeUnauthorized {
		if tokenFile == "" {
			msg += "; pass the API token with --token-file"
		} else {
			msg += "; the token was read from --token-file " + tokenFile
		}
	}
	var u *client.UnreachableError
	if errors.As(err, &u) && !strings.Contains(msg, "SCHEDULER_SERVER") {
		msg += " (set the API with --server or SCHEDULER_SERVER)"
	}
	fmt.Fprintf(stderr, "scheduler: %s\n", msg)
	return exitFail
}
