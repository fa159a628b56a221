package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// With no server there, every client command exits 1 with a message that
// names the URL it tried.
func TestClientNoServer(t *testing.T) {
	url := closedURL(t)
	for _, args := range [][]string{
		{"jobs"}, {"jobs", "x"}, {"runs", "x"}, {"trigger", "x"}, {"trigger", "x", "--wait"},
		{"pause", "x"}, {"resume", "x"}, {"cancel", "x@1"}, {"leader"}, {"members"}, {"slots"},
	} {
		out, errOut, code := cli(t, append(args, "--server", url)...)
		if code != 1 || out != "" || !strings.Contains(errOut, "no answer from "+url) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and one line naming %s", args, code, out, errOut, url)
		}
	}
	// The default server, when nothing sets one.
	t.Setenv("SCHEDULER_SERVER", "")
	os.Unsetenv("SCHEDULER_SERVER")
	var f clientFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.register(fs)
	if _, err := parseInterleaved(fs, nil, os.Stderr, clientEnv, 0, 0); err != nil || f.server != defaultServer {
		t.Errorf("default server %q (%v), want %s", f.server, err, defaultServer)
	}
}

// A command line the client cannot use exits 2 before any request: the
// server here does not exist, so a request would exit 1.
func TestClientUsageErrors(t *testing.T) {
	url := closedURL(t)
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"jobs", "a", "b"}, `unexpected argument "b"`},
		{[]string{"runs"}, "missing argument"},
		{[]string{"runs", "x", "--limit", "0"}, "--limit 0"},
		{[]string{"runs", "x", "--limit", "many"}, `invalid value "many" for flag -limit`},
		{[]string{"trigger"}, "missing argument"},
		{[]string{"trigger", "x", "--input", "[1, 2]"}, "--input must be a JSON object, got [1,2]"},
		{[]string{"trigger", "x", "--input", `{"a":`}, "--input is not valid JSON: it ends before the value is complete"},
		{[]string{"trigger", "x", "--input", "@" + missing}, missing},
		{[]string{"trigger", "x", "--wait=maybe"}, "invalid boolean value"},
		{[]string{"pause"}, "missing argument"},
		{[]string{"resume", "a", "b"}, `unexpected argument "b"`},
		{[]string{"cancel"}, "missing argument"},
		{[]string{"leader", "extra"}, `unexpected argument "extra"`},
		{[]string{"members", "-o", "yaml"}, `-o "yaml": want table, wide or json`},
		{[]string{"slots", "--token-file", missing}, missing},
		{[]string{"jobs", "--server", "ftp://127.0.0.1:8080"}, "want http://HOST:PORT"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if !slices.Contains(args, "--server") {
				args = append(args, "--server", url)
			}
			out, errOut, code := cli(t, args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line containing %q", code, out, errOut, tc.want)
			}
		})
	}
}

// "--" ends the flags: what follows is an argument even if it looks like
// one (a run id starting with "-").
func TestClientDoubleDash(t *testing.T) {
	var f clientFlags
	fs := flag.NewFlagSet("scheduler cancel RUN_ID", flag.ContinueOnError)
	f.register(fs)
	pos, err := parseInterleaved(fs, []string{"-o", "json", "--", "-odd@1"}, os.Stderr, nil, 1, 1)
	if err != nil || len(pos) != 1 || pos[0] != "-odd@1" || f.output != "json" {
		t.Errorf("pos %q, output %q, err %v", pos, f.output, err)
	}
}

// -h and --help print the verb's usage and flags on stdout and exit 0:
// help is not an error (issue 34, item 4: "scheduler: flag: help
// requested", exit 2).
func TestHelpIsNotAnError(t *testing.T) {
	for _, args := range [][]string{
		{"jobs", "--help"}, {"runs", "-h"}, {"trigger", "x", "--help"}, {"next", "--help"},
		{"validate", "-h"}, {"run", "--help"}, {"etcd", "-h"}, {"status", "--help"},
	} {
		out, errOut, code := cli(t, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: scheduler "+args[0]) || !strings.Contains(out, "flags:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, code, out, errOut)
		}
	}
}
