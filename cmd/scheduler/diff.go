package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/configdiff"
)

// exitDiffers is diff's exit code when the configs differ, and validate's
// when the capacity passes --max-peak: a CI gate stops on it
// (docs/operations.md, "Jobs as code").
const exitDiffers = 3

// defaultWindow is how far ahead diff and validate --capacity look.
const defaultWindow = 168 * time.Hour

type diffFlags struct {
	clientFlags
	path, against string
	window        time.Duration
}

// diffCommand: scheduler diff --config FILE [--against OLDFILE], what
// applying FILE would change in the cluster (or in OLDFILE, offline).
// Exit 0: no difference, 3: differences, 1: the cluster could not be
// read, 2: a usage error or a FILE that is not valid.
func diffCommand(ctx context.Context, args []string, stdout, stderr io.Writer, now time.Time) int {
	var f diffFlags
	fs := flag.NewFlagSet("scheduler diff --config FILE [--against OLDFILE] [--window 168h] [-o table|json]", flag.ContinueOnError)
	f.register(fs)
	fs.StringVar(&f.path, "config", "", "the configuration `FILE` to apply (required)")
	fs.StringVar(&f.against, "against", "", "compare with `OLDFILE` instead of the cluster's config (offline)")
	fs.DurationVar(&f.window, "window", defaultWindow, "compare the ticks of this long from now")
	if _, err := parseInterleaved(fs, args, stdout, clientEnv, 0, 0); err != nil {
		return usageError(stderr, err)
	}
	switch {
	case f.path == "":
		return usageError(stderr, fmt.Errorf("%w: --config is required", errUsage))
	case f.window <= 0 || f.window > 366*24*time.Hour:
		return usageError(stderr, fmt.Errorf("%w: --window %s: want more than 0 and at most 8784h (a year)", errUsage, f.window))
	case f.output != "table" && f.output != "json":
		return usageError(stderr, fmt.Errorf("%w: -o %q: want table or json", errUsage, f.output))
	}
	cur, code, ok := loadForDiff(stderr, f.path)
	if !ok {
		return code
	}
	opts := configdiff.Options{Now: now, Window: f.window}
	var old *config.Config
	if f.against != "" {
		if old, code, ok = loadForDiff(stderr, f.against); !ok {
			return code
		}
		// Both sides' secrets are here: any key compares them.
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		opts.OldSecrets, opts.NewSecrets = old.SecretFingerprints(key), cur.SecretFingerprints(key)
	} else {
		c, err := f.newClient()
		if err != nil {
			return usageError(stderr, err)
		}
		defer c.CloseIdleConnections()
		token, _ := f.token() // newClient read it
		if old, err = clusterSide(ctx, c, token, cur, &opts, stderr); err != nil {
			return apiFailed(stderr, err, f.tokenFile)
		}
	}
	rep, err := configdiff.Compare(old, cur, opts)
	if err != nil {
		return usageError(stderr, fmt.Errorf("%w: %w", errUsage, err))
	}
	if f.json() {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		configdiff.Render(stdout, rep)
	}
	if rep.Empty() {
		return exitOK
	}
	return exitDiffers
}

// loadForDiff loads a config file; an invalid one is a usage error (exit
// 2) with validate's messages.
func loadForDiff(stderr io.Writer, path string) (*config.Config, int, bool) {
	cfg, err := config.Load(path)
	if code, failed := loadFailed(stderr, err); failed {
		if code == exitFail {
			code = exitUsage
		}
		return nil, code, false
	}
	return cfg, exitOK, true
}

// clusterSide reads the cluster's config, its jobs' runs and, with the
// token, its secrets' fingerprints, keyed with the token as the API keys
// them; it warns when the replicas do not all apply one config.
func clusterSide(ctx context.Context, c *client.Client, token string, cur *config.Config, opts *configdiff.Options, stderr io.Writer) (*config.Config, error) {
	applied, err := c.Config(ctx)
	if err != nil {
		return nil, err
	}
	if applied.Secrets != nil {
		opts.OldSecrets = applied.Secrets
		opts.NewSecrets = cur.SecretFingerprints([]byte(token))
	}
	jobs, err := c.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	opts.Runs = map[string]configdiff.RunCounts{}
	for _, j := range jobs {
		opts.Runs[j.Name] = configdiff.RunCounts{Running: j.Running, Queued: j.Pending + j.Scheduled}
	}
	if members, err := c.Members(ctx); err == nil {
		var other []string
		for _, m := range members {
			if m.ConfigHash != applied.ConfigHash {
				other = append(other, m.ID+" ("+m.ConfigHash+")")
			}
		}
		if len(other) > 0 {
			fmt.Fprintf(stderr, "scheduler: note: compared with config %s, applied at %s; these replicas apply another: %s\n",
				applied.ConfigHash, applied.AppliedAt.Format(time.RFC3339), strings.Join(other, ", "))
		}
	}
	pub := applied.Config.Config
	return pub.Config(), nil
}
