package config

import (
	"strconv"

	"github.com/etcdsched/scheduler/internal/schedule"
)

// Calendar is a named list of dates (YYYY-MM-DD) that jobs exclude by
// name. A date is a whole day in the time zone of the job that names it.
type Calendar struct {
	Name  string   `yaml:"name" json:"name"`
	Dates []string `yaml:"dates" json:"dates"`
}

// Exclude is one rule of a job's exclude list: exactly one of a calendar,
// a cron expression, or a from/to range.
type Exclude struct {
	Calendar string `yaml:"calendar" json:"calendar,omitempty"`
	// Dates are the calendar's dates, copied in by validation: a job
	// travels alone inside queue entries, without the calendars.
	Dates []string `yaml:"-" json:"dates,omitempty"`
	// Cron excludes ticks whose minute it matches (a six-field one: second).
	Cron string `yaml:"cron" json:"cron,omitempty"`
	// From and To (RFC 3339) exclude ticks in [from, to).
	From string `yaml:"from" json:"from,omitempty"`
	To   string `yaml:"to" json:"to,omitempty"`
}

// validateCalendars returns the calendars by name; one with a bad date
// maps to nil, so that jobs naming it are not told it is unknown.
func (c *Config) validateCalendars(p *problems) map[string]*Calendar {
	byName := map[string]*Calendar{}
	paths := map[string]string{}
	for i := range c.Calendars {
		cal := &c.Calendars[i]
		path := "calendars[" + strconv.Itoa(i) + "]"
		if p.declare(paths, "calendar", cal.Name, path) {
			byName[cal.Name] = cal
		}
		for k, d := range cal.Dates {
			if _, err := schedule.ParseDate(d); err != nil {
				p.add(path+".dates["+strconv.Itoa(k)+"]", "%s", err)
				if paths[cal.Name] == path {
					byName[cal.Name] = nil
				}
			}
		}
	}
	return byName
}
