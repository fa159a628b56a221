package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

func (j *Job) validate(p *problems, path string, resources, first map[string]string, calendars map[string]*Calendar) {
	p.declare(first, "job", j.Name, path)
	j.validateSchedules(p, path, j.location(p, path), calendars)
	j.validateMaxRuns(p, path)
	j.validateShards(p, path)

	notNegative(p, path+".jitter", j.Jitter)
	j.validateOverlap(p, path)
	positive(p, path+".timeout", j.Timeout)
	j.Retries.validate(p, path+".retries")
	j.Rate.validate(p, path+".rate")
	if j.ConcurrencyKey != "" {
		if _, err := parseKey(j.ConcurrencyKey); err != nil {
			p.add(path+".concurrency_key", "not a valid template: %s", templateReason(err))
		} else if len(j.Input) > 0 {
			j.validateKeyInput(p, path)
		}
	}
	switch j.CatchUp {
	case CatchUpNone, CatchUpLatest, CatchUpAll:
	default:
		p.add(path+".catch_up", "invalid value %q: want none, latest or all", j.CatchUp)
	}
	positive(p, path+".starting_deadline", j.StartingDeadline)
	if j.OverdueAfter < 0 || (j.OverdueAfter == 0 && p.present(path+".overdue_after")) {
		p.add(path+".overdue_after", "must be positive (or left out: never overdue), got %s", j.OverdueAfter)
	}
	j.validateResources(p, path, resources)
	if j.HistoryLimit < 1 {
		p.add(path+".history_limit", "must be at least 1, got %d", j.HistoryLimit)
	}
	if j.SkippedHistoryLimit < 1 {
		p.add(path+".skipped_history_limit", "must be at least 1, got %d", j.SkippedHistoryLimit)
	}
	j.validateTarget(p, path)
}

// location is the job's time zone; UTC when it names none it can use.
func (j *Job) location(p *problems, path string) *time.Location {
	switch j.Timezone {
	case "", "UTC":
	case "Local":
		// Replicas may run with different local zones and would then
		// disagree about every tick.
		p.add(path+".timezone", `"Local" is not allowed: name the zone, e.g. "Europe/Berlin"`)
	default:
		l, err := time.LoadLocation(j.Timezone)
		if err != nil {
			p.add(path+".timezone", "unknown time zone %q", j.Timezone)
			break
		}
		return l
	}
	return time.UTC
}

// validateOverlap checks how many runs may overlap and what becomes of
// one that cannot start or is cut by a shutdown.
func (j *Job) validateOverlap(p *problems, path string) {
	if j.MaxConcurrency < 1 || j.MaxConcurrency > MaxConcurrency {
		p.add(path+".max_concurrency", "must be between 1 and %d, got %d", MaxConcurrency, j.MaxConcurrency)
	}
	switch j.Overlap {
	case OverlapSkip, OverlapReplace:
		if j.QueueLimit < 0 {
			p.add(path+".queue_limit", "must not be negative, got %d", j.QueueLimit)
		}
	case OverlapQueue:
		if j.QueueLimit < 1 {
			p.add(path+".queue_limit", "must be at least 1 with overlap: queue, got %d", j.QueueLimit)
		}
	default:
		p.add(path+".overlap", "invalid value %q: want skip, queue or replace", j.Overlap)
	}
	switch j.OnShutdown {
	case "", OnShutdownRequeue, OnShutdownCancel:
	default:
		p.add(path+".on_shutdown", "invalid value %q: want requeue or cancel", j.OnShutdown)
	}
}

// validateResources checks that each resource the job names is declared,
// and named once.
func (j *Job) validateResources(p *problems, path string, resources map[string]string) {
	listed := map[string]bool{}
	for k, r := range j.Resources {
		rp := fmt.Sprintf("%s.resources[%d]", path, k)
		switch {
		case listed[r]:
			p.add(rp, "resource %q listed twice", r)
		case resources[r] == "":
			p.add(rp, "unknown resource %q: declare it under resources", r)
		}
		listed[r] = true
	}
}

// validateTarget checks that the job has one target, http or exec, and
// that target.
func (j *Job) validateTarget(p *problems, path string) {
	switch {
	case j.HTTP == nil && j.Exec == nil:
		p.add(path, "one of http or exec is required")
	case j.HTTP != nil && j.Exec != nil:
		later := path + ".exec"
		if p.line(path+".http") > p.line(later) {
			later = path + ".http"
		}
		p.add(later, "http and exec are mutually exclusive")
	}
	if j.HTTP != nil {
		j.HTTP.validate(p, path+".http")
	}
	if j.Exec != nil {
		j.Exec.validate(p, path+".exec")
	}
}

// validateKeyInput checks that the job's default input renders a key.
func (j *Job) validateKeyInput(p *problems, path string) {
	_, err := j.ConcurrencyKeyFor(j.DefaultInput())
	var ke *KeyError
	switch {
	case err == nil:
	case errors.As(err, &ke) && ke.Missing != "":
		p.add(path+".input", "has no %q, which concurrency_key %q needs", ke.Missing, ke.Template)
	case errors.As(err, &ke):
		p.add(path+".input", "renders no valid concurrency key: %s", ke.Reason())
	default:
		p.add(path+".input", "renders no valid concurrency key: %s", err)
	}
}

func (r Retries) validate(p *problems, path string) {
	if r.Max < 0 {
		p.add(path+".max", "must not be negative, got %d", r.Max)
	}
	switch {
	case r.Backoff < 0:
		p.add(path+".backoff", "must not be negative, got %s", r.Backoff)
	case r.Backoff == 0 && r.Max > 0:
		p.add(path+".backoff", "must be positive when max > 0, got %s", r.Backoff)
	}
	if r.HoldSlot && r.Max < 1 {
		p.add(path+".hold_slot", "needs retries.max > 0: there is no later attempt to hold the slot for")
	}
	if r.MaxBackoff < r.Backoff {
		p.add(path+".max_backoff", "must not be less than backoff (%s), got %s", r.Backoff, r.MaxBackoff)
	}
}

func (h *HTTP) validate(p *problems, path string) {
	if h.URL == "" {
		p.add(path+".url", "required")
	} else if u, err := url.Parse(h.URL); err != nil {
		p.add(path+".url", "invalid URL %s", quoteURL(h.URL))
	} else if u.User != nil {
		// The URL is shown by the API and logged; credentials belong in
		// a header, which can come from a file and is redacted.
		p.add(path+".url", "must not contain credentials (user:password@): send them in a header from headers_file, e.g. Authorization")
	} else if u.Scheme != "http" && u.Scheme != "https" {
		p.add(path+".url", "must be an absolute http or https URL, got %q", h.URL)
	} else if u.Host == "" {
		p.add(path+".url", "missing host in %q", h.URL)
	}
	if !isToken(h.Method) {
		p.add(path+".method", "invalid method %q", h.Method)
	}
	for name, value := range h.Headers {
		hp := fmt.Sprintf("%s.headers[%q]", path, name)
		if !isToken(name) {
			p.add(hp, "invalid header name %q", name)
		} else if strings.ContainsAny(value, "\r\n\x00") {
			p.add(hp, "header value must not contain line breaks or NUL")
		}
	}
	if len(h.SuccessCodes) == 0 {
		p.add(path+".success_codes", "must not be empty")
	}
	for k, code := range h.SuccessCodes {
		if !validCode(code) {
			p.add(fmt.Sprintf("%s.success_codes[%d]", path, k), "invalid code %q: want 100-599 or a class 1xx-5xx", code)
		}
	}
}

// quoteURL quotes a URL for a message unless it may hold credentials.
func quoteURL(s string) string {
	if strings.Contains(s, "@") {
		return "(not shown: it contains \"@\" and may hold credentials)"
	}
	return strconv.Quote(s)
}

// validCode accepts a status code 100-599 or a class such as "2xx".
func validCode(s string) bool {
	if len(s) != 3 || s[0] < '1' || s[0] > '5' {
		return false
	}
	if s[1:] == "xx" || s[1:] == "XX" {
		return true
	}
	return '0' <= s[1] && s[1] <= '9' && '0' <= s[2] && s[2] <= '9'
}

// isToken reports whether s is an RFC 9110 token, the syntax of methods
// and header names.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 127 || !strings.ContainsRune("!#$%&'*+-.^_`|~", r) &&
			!('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

func (e *Exec) validate(p *problems, path string) {
	switch {
	case len(e.Command) == 0:
		p.add(path+".command", "required: the program and its arguments, e.g. [\"date\"]")
	case e.Command[0] == "":
		p.add(path+".command[0]", "must name a program")
	}
	for name := range e.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			p.add(fmt.Sprintf("%s.env[%q]", path, name), "invalid environment variable name %q", name)
		}
	}
	notNegative(p, path+".kill_grace", e.KillGrace)
}
