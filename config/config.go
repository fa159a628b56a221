// Package config holds the scheduler's file format: the schema of docs/configuration.md, its defaults, strict decoding and validation that reports every
// problem at once with the file, line and column it came from.
package config

import (
	"time"
)

// Config is one whole configuration file.
type Config struct {
	// Include lists globs of team files (docs/configuration.md, "Teams
	// and tokens"), relative to this file, merged in order.
	Include   []string   `yaml:"include" json:"include,omitempty"`
	Cluster   Cluster    `yaml:"cluster" json:"cluster"`
	API       API        `yaml:"api" json:"api"`
	Worker    Worker     `yaml:"worker" json:"worker"`
	Resources []Resource `yaml:"resources" json:"resources,omitempty"`
	Notify    Notify     `yaml:"notify" json:"notify"`
	Calendars []Calendar `yaml:"calendars" json:"calendars,omitempty"`
	Jobs      []Job      `yaml:"jobs" json:"jobs"`

	// Files are the files this config was read from, the main one first,
	// each with the hash of its bytes (Parse fills it in).
	Files []File `yaml:"-" json:"-"`

	// byName indexes Jobs (Parse builds it; Job checks each hit, so a
	// Config built or changed by hand is still answered, by a scan).
	byName map[string]int
	// teamDefaults wait, during Parse, for every sink to be known.
	teamDefaults []teamDefault
}

// Cluster says how replicas reach etcd and how long their sessions live.
type Cluster struct {
	Etcd    Etcd   `yaml:"etcd" json:"etcd"`
	DataDir string `yaml:"data_dir" json:"data_dir"`
	// SessionTTL is the lease TTL of a replica's session (whole seconds, >= 2s).
	SessionTTL Duration `yaml:"session_ttl" json:"session_ttl"`
	// LeaseMargin: runs are cancelled this long before the lease could expire.
	LeaseMargin Duration `yaml:"lease_margin" json:"lease_margin"`
	// RemovedHistoryTTL is how long the records of a job removed from the
	// config stay readable before the leader deletes them.
	RemovedHistoryTTL Duration `yaml:"removed_history_ttl" json:"removed_history_ttl"`
}

// Etcd is the connection to an external cluster; no endpoints means embedded.
type Etcd struct {
	Endpoints    []string `yaml:"endpoints" json:"endpoints"`
	Prefix       string   `yaml:"prefix" json:"prefix"`
	DialTimeout  Duration `yaml:"dial_timeout" json:"dial_timeout"`
	Username     string   `yaml:"username" json:"username,omitempty"`
	PasswordFile string   `yaml:"password_file" json:"password_file,omitempty"`
	TLS          TLS      `yaml:"tls" json:"tls"`
}

// TLS holds client certificate paths for etcd.
type TLS struct {
	CAFile   string `yaml:"ca_file" json:"ca_file,omitempty"`
	CertFile string `yaml:"cert_file" json:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file" json:"key_file,omitempty"`
}

// API is the HTTP server of a replica.
type API struct {
	Listen       string `yaml:"listen" json:"listen"`
	TokenFile    string `yaml:"token_file" json:"token_file,omitempty"`
	ProtectReads bool   `yaml:"protect_reads" json:"protect_reads"`
	// Tokens are scoped tokens: each may use some verbs on the jobs of
	// some teams (docs/configuration.md, "Teams and tokens").
	Tokens []Token `yaml:"tokens" json:"tokens,omitempty"`
}

// Worker bounds what one replica executes.
type Worker struct {
	MaxParallel   int      `yaml:"max_parallel" json:"max_parallel"`
	ShutdownGrace Duration `yaml:"shutdown_grace" json:"shutdown_grace"`
	// MaxInterruptions bounds how often one run is queued again after a
	// graceful shutdown cut it (outcome interrupted); then it is recorded
	// interrupted for good.
	MaxInterruptions int `yaml:"max_interruptions" json:"max_interruptions"`
}

// Resource is a semaphore shared by every job that names it.
type Resource struct {
	Name string `yaml:"name" json:"name"`
	// Limit is how many runs hold the resource at once; 0 (only with
	// Rate) means no bound on concurrent holders.
	Limit int   `yaml:"limit" json:"limit,omitempty"`
	Rate  *Rate `yaml:"rate" json:"rate,omitempty"`
}

// Rate is a sliding window: in any interval of length Per at most Count
// runs are admitted, cluster-wide.
type Rate struct {
	Count int      `yaml:"count" json:"count"`
	Per   Duration `yaml:"per" json:"per"`
}

// What a graceful shutdown does to a run still going at the end of the
// shutdown grace (Job.OnShutdown).
const (
	OnShutdownRequeue = "requeue"
	OnShutdownCancel  = "cancel"
)

// Overlap policies, applied when all of a job's slots are taken.
const (
	OverlapSkip    = "skip"
	OverlapQueue   = "queue"
	OverlapReplace = "replace"
)

// Catch-up policies for ticks missed during a leader gap.
const (
	CatchUpNone   = "none"
	CatchUpLatest = "latest"
	CatchUpAll    = "all"
)

// Job is one scheduled job. It is also what travels inside a queue entry, so
// a worker runs exactly what the leader scheduled.
type Job struct {
	Name string `yaml:"name" json:"name"`
	// Team is the team of the file the job was declared in; empty for
	// the jobs of the main file. It cannot be written in a job.
	Team     string `yaml:"-" json:"team,omitempty"`
	Schedule string `yaml:"schedule" json:"schedule"`
	// Schedules are several schedules, one tick per instant; Schedule is
	// the one-item shorthand.
	Schedules []string  `yaml:"schedules" json:"schedules,omitempty"`
	Exclude   []Exclude `yaml:"exclude" json:"exclude,omitempty"`
	// StartAt and EndAt (RFC 3339) bound the ticks to [start_at, end_at).
	StartAt          string   `yaml:"start_at" json:"start_at,omitempty"`
	EndAt            string   `yaml:"end_at" json:"end_at,omitempty"`
	Timezone         string   `yaml:"timezone" json:"timezone,omitempty"`
	Jitter           Duration `yaml:"jitter" json:"jitter,omitempty"`
	MaxConcurrency   int      `yaml:"max_concurrency" json:"max_concurrency"`
	Overlap          string   `yaml:"overlap" json:"overlap"`
	QueueLimit       int      `yaml:"queue_limit" json:"queue_limit"`
	Timeout          Duration `yaml:"timeout" json:"timeout"`
	Retries          Retries  `yaml:"retries" json:"retries"`
	CatchUp          string   `yaml:"catch_up" json:"catch_up"`
	StartingDeadline Duration `yaml:"starting_deadline" json:"starting_deadline"`
	Resources        []string `yaml:"resources" json:"resources,omitempty"`
	// Rate bounds the job's own starts, whatever the concurrency key.
	Rate *Rate `yaml:"rate" json:"rate,omitempty"`
	// ConcurrencyKey is a text/template over the run's input; when set,
	// max_concurrency holds per rendered key instead of per job.
	ConcurrencyKey string `yaml:"concurrency_key" json:"concurrency_key,omitempty"`
	// Input is the run's input when its trigger gives none.
	Input  map[string]any `yaml:"input" json:"input,omitempty"`
	Paused bool           `yaml:"paused" json:"paused"`
	// OnShutdown is what a graceful shutdown does to a run still going
	// when the shutdown grace ends: "" or "requeue" records it interrupted
	// and queues it again at once; "cancel" records it cancelled. Empty by
	// default, so the specs of jobs that do not set it stay as they were.
	OnShutdown string `yaml:"on_shutdown" json:"on_shutdown,omitempty"`
	// HistoryLimit counts records of runs that executed; skipped and
	// missed records have their own SkippedHistoryLimit, so that a flood
	// of skips cannot push real history out.
	HistoryLimit        int   `yaml:"history_limit" json:"history_limit"`
	SkippedHistoryLimit int   `yaml:"skipped_history_limit" json:"skipped_history_limit"`
	HTTP                *HTTP `yaml:"http" json:"http,omitempty"`
	Exec                *Exec `yaml:"exec" json:"exec,omitempty"`
	// Notify names the job's sinks; nil means notify.default, empty none.
	Notify []string `yaml:"notify" json:"notify"`
	After  *After   `yaml:"after" json:"after,omitempty"`
	// MaxRuns stops the job's schedule after that many scheduled runs,
	// counted once across the cluster (docs/configuration.md#jobs); 0: no limit.
	MaxRuns int `yaml:"max_runs" json:"max_runs,omitempty"`
	// PauseOnFailure pauses the job in the transaction that records a
	// run's final failed, timed_out or lost outcome (docs/configuration.md#jobs).
	PauseOnFailure bool `yaml:"pause_on_failure" json:"pause_on_failure,omitempty"`
	// Shards splits each tick into that many runs (docs/configuration.md#sharded-jobs); 0
	// or 1: one run a tick. ShardInputs[k] is merged over shard k's input.
	Shards      int              `yaml:"shards" json:"shards,omitempty"`
	ShardInputs []map[string]any `yaml:"shard_inputs" json:"shard_inputs,omitempty"`
	// OverdueAfter: a tick not succeeded this long after its scheduled
	// time is overdue, and the leader notifies "overdue" once
	// (docs/operations.md#overdue); 0: never overdue.
	OverdueAfter Duration `yaml:"overdue_after" json:"overdue_after,omitempty"`
}

// Retries: exponential backoff, on failure only.
type Retries struct {
	Max        int      `yaml:"max" json:"max"`
	Backoff    Duration `yaml:"backoff" json:"backoff"`
	MaxBackoff Duration `yaml:"max_backoff" json:"max_backoff"`
	// HoldSlot keeps the run's slots (and key) across attempts, so nothing
	// else starts between a failure and its retry.
	HoldSlot bool `yaml:"hold_slot" json:"hold_slot,omitempty"`
}

// HTTP is a request target.
type HTTP struct {
	Method  string            `yaml:"method" json:"method"`
	URL     string            `yaml:"url" json:"url"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// HeadersFile names a YAML mapping of header name to value, read at
	// load time (relative to the config file) and merged into Headers, so
	// that tokens need not be written in the config file.
	HeadersFile  string   `yaml:"headers_file" json:"headers_file,omitempty"`
	Body         string   `yaml:"body" json:"body,omitempty"`
	SuccessCodes []string `yaml:"success_codes" json:"success_codes"`
	// FollowRedirects is off by default: a scheduler should see what the
	// target answered, not what a redirect chain ended at.
	FollowRedirects bool `yaml:"follow_redirects" json:"follow_redirects,omitempty"`
}

// Exec is a command target; no shell unless Command names one.
type Exec struct {
	Command []string          `yaml:"command" json:"command"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
	// EnvFile names a file of KEY=VALUE lines, read at load time
	// (relative to the config file) and merged into Env.
	EnvFile string `yaml:"env_file" json:"env_file,omitempty"`
	Dir     string `yaml:"dir" json:"dir,omitempty"`
	// KillGrace is how long the process group has between SIGTERM and SIGKILL.
	KillGrace Duration `yaml:"kill_grace" json:"kill_grace,omitempty"`
}

// Duration is a time.Duration written as "5s", "1m30s" in YAML and JSON.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the Go duration syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads the Go duration syntax.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
