// Package configdiff says what applying one scheduler config in place of
// another would change (docs/operations.md, "Jobs as code"): the jobs,
// resources, calendars, sinks and settings added, removed and changed,
// field by field with secrets named but never shown; per job the ticks of
// a window that appear, disappear or move; and what becomes of the runs a
// cluster has running or queued for the jobs the change touches.
package configdiff

import (
	"errors"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// Changes of an item or a field.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// Kinds of item.
const (
	KindJob      = "job"
	KindResource = "resource"
	KindCalendar = "calendar"
	KindSink     = "sink"
	KindSetting  = "setting"
)

// Options say what to compare beyond the two files.
type Options struct {
	// Now starts the window of ticks; Window is its length (> 0).
	Now    time.Time
	Window time.Duration
	// OldSecrets and NewSecrets fingerprint the secret values of each
	// side with one key (config.SecretFingerprints); nil OldSecrets means
	// the old side's secrets are unknown and are not compared.
	OldSecrets, NewSecrets map[string]string
	// Runs counts the runs the cluster has of each job now; nil offline.
	Runs map[string]RunCounts
}

// RunCounts are a job's runs in the cluster.
type RunCounts struct {
	Running int `json:"running"`
	Queued  int `json:"queued"`
}

// Report is the whole difference.
type Report struct {
	From   time.Time `json:"from"`
	Window string    `json:"window"`
	Items  []Item    `json:"changes"`
	// SecretsCompared is false when the old side's secrets were unknown.
	SecretsCompared bool `json:"secrets_compared"`
}

// Item is one job, resource, calendar, sink or setting that differs.
type Item struct {
	Kind   string  `json:"kind"`
	Name   string  `json:"name"`
	Change string  `json:"change"`
	Fields []Field `json:"fields,omitempty"`
	Ticks  *Ticks  `json:"ticks,omitempty"`
	Runs   *Runs   `json:"runs,omitempty"`
}

// Field is one field that differs, by its path inside the item. A secret
// field has no values, only its change.
type Field struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
	Secret bool   `json:"secret,omitempty"`
}

// Runs are the runs of the cluster a change touches and what happens to
// them.
type Runs struct {
	RunCounts
	Effect string `json:"effect"`
}

// Empty says whether nothing differs.
func (r Report) Empty() bool { return len(r.Items) == 0 }

// Compare reports what applying cur in place of old would change.
func Compare(old, cur *config.Config, opts Options) (Report, error) {
	if opts.Window <= 0 {
		return Report{}, errors.New("configdiff: the window must be positive")
	}
	if old == nil || cur == nil {
		return Report{}, errors.New("configdiff: two configs are needed")
	}
	rep := Report{From: opts.Now.UTC(), Window: WindowText(opts.Window), SecretsCompared: opts.OldSecrets != nil}
	secrets := secretChanges(opts.OldSecrets, opts.NewSecrets)
	rep.Items = append(rep.Items, compareJobs(old, cur, opts, secrets)...)
	op, cp := old.Public(), cur.Public()
	rep.Items = append(rep.Items, compareNamed(KindResource, op.Resources, cp.Resources, func(r config.Resource) string { return r.Name }, nil)...)
	rep.Items = append(rep.Items, compareNamed(KindCalendar, op.Calendars, cp.Calendars, func(c config.Calendar) string { return c.Name }, nil)...)
	rep.Items = append(rep.Items, compareNamed(KindSink, op.Notify.Sinks, cp.Notify.Sinks, func(s config.Sink) string { return s.Name }, secrets)...)
	op.Jobs, cp.Jobs, op.Resources, cp.Resources, op.Calendars, cp.Calendars = nil, nil, nil, nil, nil, nil
	op.Notify.Sinks, cp.Notify.Sinks = nil, nil
	for _, f := range compareFields(flatten(op), flatten(cp)) {
		rep.Items = append(rep.Items, Item{Kind: KindSetting, Name: f.Path, Change: f.Change, Fields: []Field{f}})
	}
	return rep, nil
}
