package config

import (
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// NamePattern is the syntax of job and resource names: they appear in etcd keys
// and run ids ("<job>@<time>"), so no "/" and no "@".
const NamePattern = `[a-z0-9][a-z0-9._-]{0,62}`

var reName = regexp.MustCompile(`^` + NamePattern + `$`)

// declare checks the name of the kind (job, resource, sink, calendar)
// declared at path: present, of NamePattern, and the first of its kind;
// first maps each name declared so far to its path. It reports whether
// the name is declared here.
func (p *problems) declare(first map[string]string, kind, name, path string) bool {
	switch prev, dup := first[name]; {
	case name == "":
		p.add(path+".name", "required")
	case !reName.MatchString(name):
		p.add(path+".name", "invalid %s name %q: want %s", kind, name, NamePattern)
	case dup:
		p.add(path+".name", "duplicate %s name %q (first at %s)", kind, name, p.where(prev+".name", path+".name"))
	default:
		first[name] = path
		return true
	}
	return false
}

// MaxConcurrency bounds max_concurrency: every slot is an etcd key a
// worker may probe when it claims a run.
const MaxConcurrency = 1000

// MinSessionTTL is the shortest session: with less, one slow keepalive
// round trip is enough to lose every slot a replica holds.
const MinSessionTTL = 2 * time.Second

// Validate checks a Config built or changed in code, such as one with
// command-line overrides applied. Problems carry paths but no positions.
func (c *Config) Validate() error {
	p := newProblems("")
	c.validate(p)
	return p.err()
}

func (c *Config) validate(p *problems) {
	c.validateCluster(p)
	c.validateAPI(p)
	c.validateTokens(p)
	if c.Worker.MaxParallel < 1 {
		p.add("worker.max_parallel", "must be at least 1, got %d", c.Worker.MaxParallel)
	}
	notNegative(p, "worker.shutdown_grace", c.Worker.ShutdownGrace)
	if c.Worker.MaxInterruptions < 0 {
		p.add("worker.max_interruptions", "must be 0 or more, got %d", c.Worker.MaxInterruptions)
	}
	for i, r := range c.Resources {
		p.names["resources["+strconv.Itoa(i)+"]"] = r.Name
	}
	for i, j := range c.Jobs {
		p.names["jobs["+strconv.Itoa(i)+"]"] = j.Name
	}
	declared := c.validateResources(p)
	calendars := c.validateCalendars(p)
	first := map[string]string{} // job name -> path of its first use
	for i := range c.Jobs {
		c.Jobs[i].validate(p, "jobs["+strconv.Itoa(i)+"]", declared, first, calendars)
	}
	c.validateNotify(p)
	c.validateChains(p)
}

func (c *Config) validateCluster(p *problems) {
	e := c.Cluster.Etcd
	for i, ep := range e.Endpoints {
		path := "cluster.etcd.endpoints[" + strconv.Itoa(i) + "]"
		if !validEndpoint(ep) {
			p.add(path, "invalid endpoint %q: want host:port or http(s)://host:port", ep)
		}
	}
	if !strings.HasPrefix(e.Prefix, "/") {
		p.add("cluster.etcd.prefix", "must start with \"/\", got %q", e.Prefix)
	}
	positive(p, "cluster.etcd.dial_timeout", e.DialTimeout)
	if e.PasswordFile != "" && e.Username == "" {
		p.add("cluster.etcd.password_file", "set without username")
	}
	if e.TLS.CertFile != "" && e.TLS.KeyFile == "" {
		p.add("cluster.etcd.tls.cert_file", "set without key_file")
	}
	if e.TLS.KeyFile != "" && e.TLS.CertFile == "" {
		p.add("cluster.etcd.tls.key_file", "set without cert_file")
	}
	if len(e.Endpoints) == 0 && c.Cluster.DataDir == "" {
		p.add("cluster.data_dir", "must be set when there are no etcd endpoints (embedded etcd)")
	}

	ttl, margin := c.Cluster.SessionTTL.D(), c.Cluster.LeaseMargin.D()
	ttlOK := false
	switch {
	case ttl < MinSessionTTL:
		p.add("cluster.session_ttl", "must be at least %s, got %s", MinSessionTTL, ttl)
	case ttl%time.Second != 0:
		// etcd grants leases in whole seconds.
		p.add("cluster.session_ttl", "must be a whole number of seconds, got %s", ttl)
	default:
		ttlOK = true
	}
	switch {
	case margin <= 0:
		p.add("cluster.lease_margin", "must be positive, got %s", margin)
	case ttlOK && margin >= ttl:
		p.add("cluster.lease_margin", "must be less than session_ttl (%s), got %s", ttl, margin)
	}
	if keep := c.Cluster.RemovedHistoryTTL.D(); keep < time.Minute {
		p.add("cluster.removed_history_ttl", "must be at least 1m (how long a removed job's history stays readable), got %s", keep)
	}
}

func validEndpoint(ep string) bool {
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
	}
	host, port, err := net.SplitHostPort(ep)
	return err == nil && host != "" && validPort(port)
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535
}

func (c *Config) validateAPI(p *problems) {
	_, port, err := net.SplitHostPort(c.API.Listen)
	if err != nil || !validPort(port) {
		p.add("api.listen", "invalid address %q: want host:port, e.g. 127.0.0.1:8080 or :8080", c.API.Listen)
	}
}

// validateResources returns the declared names with the path of each.
func (c *Config) validateResources(p *problems) map[string]string {
	declared := map[string]string{}
	for i, r := range c.Resources {
		path := "resources[" + strconv.Itoa(i) + "]"
		p.declare(declared, "resource", r.Name, path)
		switch {
		case r.Limit == 0 && r.Rate != nil:
			// A pure rate limit: no bound on concurrent holders.
		case r.Limit < 1 && p.fromFile() && !p.present(path+".limit"):
			p.add(path+".limit", "required")
		case r.Limit < 1:
			p.add(path+".limit", "must be at least 1, got %d", r.Limit)
		}
		r.Rate.validate(p, path+".rate")
	}
	return declared
}

// MinRatePer is the shortest rate window: the window's safety margin
// (clock skew and claim-to-start latency, a fraction of a second) must stay
// small beside it.
const MinRatePer = time.Second

// MaxRateCount bounds a window's count: every place in it is an etcd key.
const MaxRateCount = 1000

func (r *Rate) validate(p *problems, path string) {
	if r == nil {
		return
	}
	if r.Count < 1 || r.Count > MaxRateCount {
		p.add(path+".count", "must be between 1 and %d, got %d", MaxRateCount, r.Count)
	}
	if r.Per < Duration(MinRatePer) {
		p.add(path+".per", "must be at least %s, got %s", MinRatePer, r.Per)
	}
}

func notNegative(p *problems, path string, d Duration) {
	if d < 0 {
		p.add(path, "must not be negative, got %s", d)
	}
}

func positive(p *problems, path string, d Duration) {
	if d <= 0 {
		p.add(path, "must be positive, got %s", d)
	}
}
