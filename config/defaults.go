package config

import (
	"strings"
	"time"
)

// Defaults of docs/configuration.md. A setting left out of the file gets its
// default; a setting written with a bad value is an error, never silently
// replaced by the default.
const (
	DefaultPrefix        = "/scheduler/"
	DefaultDialTimeout   = 5 * time.Second
	DefaultDataDir       = "./data"
	DefaultSessionTTL    = 5 * time.Second
	DefaultLeaseMargin   = 1 * time.Second
	DefaultListen        = "127.0.0.1:8080"
	DefaultMaxParallel   = 64
	DefaultShutdownGrace = 30 * time.Second
	// DefaultMaxInterruptions: a run cut by three graceful shutdowns in a
	// row (a rolling deploy of three replicas) is queued again each time.
	DefaultMaxInterruptions = 3

	DefaultRemovedHistoryTTL = 168 * time.Hour

	DefaultTimezone            = "UTC"
	DefaultMaxConcurrency      = 1
	DefaultOverlap             = OverlapSkip
	DefaultQueueLimit          = 1
	DefaultTimeout             = time.Hour
	DefaultRetryBackoff        = time.Second
	DefaultRetryMaxBackoff     = time.Minute
	DefaultCatchUp             = CatchUpLatest
	DefaultStartingDeadline    = time.Minute
	DefaultHistoryLimit        = 100
	DefaultSkippedHistoryLimit = 20

	// DefaultMethod is GET whatever the body: a default that changes with
	// another field surprises more than it helps; write POST when you mean it.
	DefaultMethod    = "GET"
	DefaultKillGrace = 10 * time.Second
)

// DefaultSuccessCodes: any 2xx answer is a success.
var DefaultSuccessCodes = []string{"2xx"}

func (c *Config) setDefaults() {
	c.Cluster = Cluster{
		Etcd: Etcd{
			Prefix:      DefaultPrefix,
			DialTimeout: Duration(DefaultDialTimeout),
		},
		DataDir:     DefaultDataDir,
		SessionTTL:  Duration(DefaultSessionTTL),
		LeaseMargin: Duration(DefaultLeaseMargin),

		RemovedHistoryTTL: Duration(DefaultRemovedHistoryTTL),
	}
	c.API = API{Listen: DefaultListen}
	c.Notify = Notify{MaxAge: Duration(DefaultNotifyMaxAge)}
	c.Worker = Worker{
		MaxParallel:      DefaultMaxParallel,
		ShutdownGrace:    Duration(DefaultShutdownGrace),
		MaxInterruptions: DefaultMaxInterruptions,
	}
}

func (j *Job) setDefaults() {
	j.Timezone = DefaultTimezone
	j.MaxConcurrency = DefaultMaxConcurrency
	j.Overlap = DefaultOverlap
	j.QueueLimit = DefaultQueueLimit
	j.Timeout = Duration(DefaultTimeout)
	j.Retries = Retries{
		Backoff:    Duration(DefaultRetryBackoff),
		MaxBackoff: Duration(DefaultRetryMaxBackoff),
	}
	j.CatchUp = DefaultCatchUp
	j.StartingDeadline = Duration(DefaultStartingDeadline)
	j.HistoryLimit = DefaultHistoryLimit
	j.SkippedHistoryLimit = DefaultSkippedHistoryLimit
}

func (h *HTTP) setDefaults() {
	h.Method = DefaultMethod
	h.SuccessCodes = append([]string(nil), DefaultSuccessCodes...)
}

func (e *Exec) setDefaults() {
	e.KillGrace = Duration(DefaultKillGrace)
}

// normalize puts valid values into the one form the rest of the program
// relies on, so that equal meanings hash equally.
func (c *Config) normalize() {
	defer c.indexJobs()
	if len(c.Cluster.Etcd.Endpoints) == 0 {
		c.Cluster.Etcd.Endpoints = nil
	}
	if !strings.HasSuffix(c.Cluster.Etcd.Prefix, "/") {
		c.Cluster.Etcd.Prefix += "/"
	}
	for i := range c.Jobs {
		j := &c.Jobs[i]
		if j.Timezone == "" {
			j.Timezone = DefaultTimezone
		}
		if h := j.HTTP; h != nil {
			// Methods are case-sensitive on the wire and servers expect
			// upper case; "post" in a file is never meant literally.
			h.Method = strings.ToUpper(h.Method)
			for k, code := range h.SuccessCodes {
				h.SuccessCodes[k] = strings.ToLower(code)
			}
		}
	}
}
