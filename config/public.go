package config

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Public is the configuration as GET /api/v1/config shows it (docs/api.md):
// every setting the replicas share, defaults filled in, and nothing a
// replica sets for itself (docs/design-edges.md lists those) nor any
// secret: header and environment values read "<redacted>", a sink's
// headers are left out, etcd credentials and the token's path are gone.
// Its YAML is a config file `scheduler validate` accepts.
type Public struct {
	Cluster   PublicCluster `yaml:"cluster" json:"cluster"`
	API       PublicAPI     `yaml:"api" json:"api"`
	Worker    PublicWorker  `yaml:"worker" json:"worker"`
	Resources []Resource    `yaml:"resources,omitempty" json:"resources,omitempty"`
	Notify    Notify        `yaml:"notify" json:"notify"`
	Calendars []Calendar    `yaml:"calendars,omitempty" json:"calendars,omitempty"`
	Jobs      []Job         `yaml:"jobs" json:"jobs"`
}

// PublicCluster is the shared part of cluster.
type PublicCluster struct {
	Etcd              PublicEtcd `yaml:"etcd" json:"etcd"`
	SessionTTL        Duration   `yaml:"session_ttl" json:"session_ttl"`
	LeaseMargin       Duration   `yaml:"lease_margin" json:"lease_margin"`
	RemovedHistoryTTL Duration   `yaml:"removed_history_ttl" json:"removed_history_ttl"`
}

// PublicEtcd is the shared part of cluster.etcd: the prefix that makes one
// scheduler.
type PublicEtcd struct {
	Prefix string `yaml:"prefix" json:"prefix"`
}

// PublicAPI is the shared part of api.
type PublicAPI struct {
	ProtectReads bool `yaml:"protect_reads" json:"protect_reads"`
}

// PublicWorker is the shared part of worker.
type PublicWorker struct {
	MaxInterruptions int `yaml:"max_interruptions" json:"max_interruptions"`
}

// Public returns the shared, secret-free view of c. It shares nothing with
// c that either could change.
func (c *Config) Public() Public {
	s := c.Shared()
	p := Public{
		Cluster: PublicCluster{
			Etcd:              PublicEtcd{Prefix: s.Cluster.Etcd.Prefix},
			SessionTTL:        s.Cluster.SessionTTL,
			LeaseMargin:       s.Cluster.LeaseMargin,
			RemovedHistoryTTL: s.Cluster.RemovedHistoryTTL,
		},
		API:       PublicAPI{ProtectReads: s.API.ProtectReads},
		Worker:    PublicWorker{MaxInterruptions: s.Worker.MaxInterruptions},
		Resources: slices.Clone(s.Resources),
		Notify:    s.Notify,
		Calendars: slices.Clone(s.Calendars),
		Jobs:      make([]Job, len(s.Jobs)),
	}
	p.Notify.Sinks = slices.Clone(p.Notify.Sinks)
	for i := range p.Notify.Sinks {
		p.Notify.Sinks[i].Headers = nil
	}
	for i := range s.Jobs {
		p.Jobs[i] = s.Jobs[i].Redacted()
	}
	return p
}

// Config turns the view back into a Config that answers Job lookups and
// schedules (the per-replica settings stay zero), so that the cluster's
// config can be compared with a file (scheduler diff).
func (p Public) Config() *Config {
	c := &Config{
		Resources: p.Resources,
		Notify:    p.Notify,
		Calendars: p.Calendars,
		Jobs:      p.Jobs,
	}
	c.Cluster.Etcd.Prefix = p.Cluster.Etcd.Prefix
	c.Cluster.SessionTTL = p.Cluster.SessionTTL
	c.Cluster.LeaseMargin = p.Cluster.LeaseMargin
	c.Cluster.RemovedHistoryTTL = p.Cluster.RemovedHistoryTTL
	c.API.ProtectReads = p.API.ProtectReads
	c.Worker.MaxInterruptions = p.Worker.MaxInterruptions
	c.indexJobs()
	return c
}

// SecretFingerprints names every secret value of c (header and environment
// values of jobs, headers of sinks) by its path, e.g.
// `jobs.report.http.headers.Authorization`, with a fingerprint keyed by
// key: HMAC-SHA256 of the path and value, 16 hex digits. Two configs
// fingerprinted with one key show which secrets changed without showing
// any; without the key a fingerprint cannot be used to test guesses. The
// API keys them with its token, so only a reader who holds the token (and
// may read the values anyway) can compare (docs/api.md).
func (c *Config) SecretFingerprints(key []byte) map[string]string {
	out := map[string]string{}
	add := func(path, value string) {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(path))
		m.Write([]byte{0})
		m.Write([]byte(value))
		out[path] = hex.EncodeToString(m.Sum(nil))[:16]
	}
	for i := range c.Jobs {
		j := &c.Jobs[i]
		if j.HTTP != nil {
			for k, v := range j.HTTP.Headers {
				add("jobs."+j.Name+".http.headers."+k, v)
			}
		}
		if j.Exec != nil {
			for k, v := range j.Exec.Env {
				add("jobs."+j.Name+".exec.env."+k, v)
			}
		}
	}
	for _, s := range c.Notify.Sinks {
		for k, v := range s.Headers {
			add("notify.sinks."+s.Name+".headers."+k, v)
		}
	}
	return out
}
