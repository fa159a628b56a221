package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Notify is where the scheduler reports how runs ended (docs/notify.md#notify).
type Notify struct {
	Sinks []Sink `yaml:"sinks" json:"sinks,omitempty"`
	// Default lists the sinks of every job that names none.
	Default []string `yaml:"default" json:"default,omitempty"`
	// MaxAge: a notification not delivered this long after its run ended
	// is dropped and counted.
	MaxAge Duration `yaml:"max_age" json:"max_age"`
}

// Sink formats.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
)

// Recovered is the event of the first succeeded run after one or more runs
// that ended otherwise; the other events are the outcomes themselves.
const Recovered = "recovered"

// Failing is the event of the first run that ends otherwise than
// succeeded after a succeeded one: the mirror of Recovered.
const Failing = "failing"

// Overdue is the event of a tick not succeeded overdue_after past its
// scheduled time, written once per tick by the leader (docs/operations.md#overdue).
const Overdue = "overdue"

// Paused is the event of a job paused by pause_on_failure (docs/configuration.md#jobs), sent with the record of the run that paused it.
const Paused = "paused"

// Outcomes are the outcomes a run can end with (docs/api.md), the
// values of after.on.
var Outcomes = []string{"succeeded", "failed", "timed_out", "cancelled", "lost", "skipped", "missed", "interrupted"}

// events are the sink events that are not outcomes.
var events = []string{Recovered, Failing, Paused, Overdue}

// DefaultSinkOn are the events a sink gets when it names none.
var DefaultSinkOn = []string{"failed", "timed_out", "lost", "missed", Recovered, Overdue}

// DefaultNotifyMaxAge is notify.max_age when the file leaves it out.
const DefaultNotifyMaxAge = time.Hour

// Sink is an HTTP endpoint notifications are POSTed to.
type Sink struct {
	Name   string `yaml:"name" json:"name"`
	URL    string `yaml:"url" json:"url"`
	Format string `yaml:"format" json:"format"`
	// HeadersFile is a YAML mapping of header name to value, read when the
	// configuration is loaded (relative to the configuration file), so that
	// secrets stay out of the file.
	HeadersFile string   `yaml:"headers_file" json:"headers_file,omitempty"`
	On          []string `yaml:"on" json:"on"`
	// Headers is what HeadersFile held. It never leaves the process: no
	// JSON (the API, the hash), no logs.
	Headers map[string]string `yaml:"-" json:"-"`
}

func (s *Sink) setDefaults() {
	s.Format = FormatJSON
	s.On = slices.Clone(DefaultSinkOn)
}

// Wants reports whether the sink gets event.
func (s *Sink) Wants(event string) bool { return slices.Contains(s.On, event) }

// Sink returns the sink called name, or nil.
func (c *Config) Sink(name string) *Sink {
	for i := range c.Notify.Sinks {
		if c.Notify.Sinks[i].Name == name {
			return &c.Notify.Sinks[i]
		}
	}
	return nil
}

// SinksOf are the sinks of job: its own list, or notify.default when it
// names none (a nil list; an empty one means none).
func (c *Config) SinksOf(job *Job) []*Sink {
	names := job.Notify
	if names == nil {
		names = c.Notify.Default
	}
	out := make([]*Sink, 0, len(names))
	for _, n := range names {
		if s := c.Sink(n); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (c *Config) validateNotify(p *problems) {
	declared := map[string]string{}
	for i := range c.Notify.Sinks {
		s := &c.Notify.Sinks[i]
		path := "notify.sinks[" + strconv.Itoa(i) + "]"
		p.declare(declared, "sink", s.Name, path)
		if s.URL == "" {
			p.add(path+".url", "required")
		} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add(path+".url", "must be an absolute http or https URL, got %q", s.URL)
		}
		if s.Format != FormatJSON && s.Format != FormatSlack {
			p.add(path+".format", "invalid value %q: want json or slack", s.Format)
		}
		for k, ev := range s.On {
			if !slices.Contains(events, ev) && !slices.Contains(Outcomes, ev) {
				p.add(fmt.Sprintf("%s.on[%d]", path, k), "unknown event %q: want one of %s or %s", ev, strings.Join(Outcomes, ", "), strings.Join(events, ", "))
			}
		}
		for name, value := range s.Headers {
			// Name the header, never its value: it may be a secret.
			if !isToken(name) {
				p.add(path+".headers_file", "invalid header name %q", name)
			} else if strings.ContainsAny(value, "\r\n\x00") {
				p.add(path+".headers_file", "value of header %q must not contain line breaks or NUL", name)
			}
		}
	}
	if c.Notify.MaxAge <= 0 {
		p.add("notify.max_age", "must be positive, got %s", c.Notify.MaxAge)
	}
	for k, name := range c.Notify.Default {
		if declared[name] == "" {
			p.add(fmt.Sprintf("notify.default[%d]", k), "unknown sink %q: declare it under notify.sinks", name)
		}
	}
	for i := range c.Jobs {
		if c.Jobs[i].Team != "" && p.fromFile() && !p.present(fmt.Sprintf("jobs[%d].notify", i)) {
			continue // its team's default, checked where the team file names it
		}
		for k, name := range c.Jobs[i].Notify {
			if declared[name] == "" {
				p.add(fmt.Sprintf("jobs[%d].notify[%d]", i, k), "unknown sink %q: declare it under notify.sinks", name)
			}
		}
	}
}

// readSinkHeaders reads each sink's headers_file, relative to the
// configuration file's directory. Its problems name the file, never what
// it holds.
func (c *Config) readSinkHeaders(p *problems, configFile string) {
	for i := range c.Notify.Sinks {
		s := &c.Notify.Sinks[i]
		if s.HeadersFile == "" {
			continue
		}
		path := "notify.sinks[" + strconv.Itoa(i) + "].headers_file"
		file := s.HeadersFile
		if !filepath.IsAbs(file) && configFile != "" {
			file = filepath.Join(filepath.Dir(configFile), file)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			p.add(path, "cannot read %q: %s", s.HeadersFile, pathErr(err))
			continue
		}
		var headers map[string]string
		if err := yaml.Unmarshal(data, &headers); err != nil {
			p.add(path, "%q: want a YAML mapping of header name to value", s.HeadersFile)
			continue
		}
		s.Headers = headers
	}
}

// pathErr is the reason of a file error without the path it repeats.
func pathErr(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
