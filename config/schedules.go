package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/internal/schedule"
)

// ScheduleSpecs returns the job's schedules: schedules, or schedule as a
// one-item list.
func (j *Job) ScheduleSpecs() []string {
	if len(j.Schedules) > 0 {
		return j.Schedules
	}
	if j.Schedule == "" {
		return nil
	}
	return []string{j.Schedule}
}

// ScheduleText shows the job's schedules on one line.
func (j *Job) ScheduleText() string { return strings.Join(j.ScheduleSpecs(), " | ") }

// single returns the job's schedule when it has exactly one.
func (j *Job) single() (string, bool) {
	switch {
	case len(j.Schedules) == 1:
		return j.Schedules[0], true
	case len(j.Schedules) == 0 && j.Schedule != "":
		return j.Schedule, true
	}
	return "", false
}

// plain reports whether the job has one schedule and nothing around it,
// so that the schedule is used as it is. It allocates nothing: the
// dispatch loop asks on every tick.
func (j *Job) plain() bool {
	_, one := j.single()
	return one && len(j.Exclude) == 0 && j.StartAt == "" && j.EndAt == ""
}

// buildSchedule parses the job's schedules, exclusions and active period
// into one Schedule.
func (j *Job) buildSchedule(loc *time.Location) (schedule.Schedule, error) {
	if spec, _ := j.single(); j.plain() {
		return schedule.Parse(spec, loc)
	}
	specs := j.ScheduleSpecs()
	scheds := make([]schedule.Schedule, 0, len(specs))
	for _, spec := range specs {
		s, err := schedule.Parse(spec, loc)
		if err != nil {
			return nil, fmt.Errorf("schedule %q: %w", spec, err)
		}
		scheds = append(scheds, s)
	}
	rules := make([]schedule.Exclusion, 0, len(j.Exclude))
	for k, e := range j.Exclude {
		r, err := e.rule(loc)
		if err != nil {
			return nil, fmt.Errorf("exclude[%d]: %w", k, err)
		}
		rules = append(rules, r)
	}
	start, end, err := parseSpan("start_at", j.StartAt, "end_at", j.EndAt)
	if err != nil {
		return nil, err
	}
	return schedule.NewUnion(scheds, rules, start, end)
}

// rule is the exclusion an entry describes; validation has checked that it
// describes exactly one.
func (e Exclude) rule(loc *time.Location) (schedule.Exclusion, error) {
	switch {
	case e.Calendar != "":
		return schedule.NewCalendar(e.Calendar, e.Dates, loc)
	case e.Cron != "":
		return schedule.NewCronExclusion(e.Cron, loc)
	}
	from, to, err := parseSpan("from", e.From, "to", e.To)
	if err != nil {
		return nil, err
	}
	return schedule.NewBetween(from, to)
}

// parseSpan reads the two ends of a span with parseInstant; an error names
// the key of the end it is about.
func parseSpan(startKey, start, endKey, end string) (time.Time, time.Time, error) {
	s, err := parseInstant(start)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("%s: %w", startKey, err)
	}
	e, err := parseInstant(end)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("%s: %w", endKey, err)
	}
	return s, e, nil
}

// parseInstant reads an RFC 3339 time; empty is the zero time.
func parseInstant(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf(`invalid time %q: want RFC 3339, e.g. "2026-12-01T00:00:00+01:00"`, s)
	}
	return t, nil
}

// kinds names the rules an exclude entry sets.
func (e Exclude) kinds() []string {
	var k []string
	if e.Calendar != "" {
		k = append(k, "calendar")
	}
	if e.Cron != "" {
		k = append(k, "cron")
	}
	if e.From != "" || e.To != "" {
		k = append(k, "from/to")
	}
	return k
}

// keyOf is the cache key of the job's schedule: everything it depends on.
func (j *Job) keyOf() string {
	if spec, _ := j.single(); j.plain() {
		return j.Timezone + "\n" + spec
	}
	var b strings.Builder
	b.WriteString(j.Timezone)
	for _, s := range j.ScheduleSpecs() {
		b.WriteString("\n" + s)
	}
	b.WriteString("\x00" + j.StartAt + "\x00" + j.EndAt)
	for _, e := range j.Exclude {
		b.WriteString("\x00" + e.Calendar + "\x01" + e.Cron + "\x01" + e.From + "\x01" + e.To)
		for _, d := range e.Dates {
			b.WriteString("\x01" + d)
		}
	}
	return b.String()
}

// validateMaxRuns checks max_runs: absent or 0 is no limit.
func (j *Job) validateMaxRuns(p *problems, path string) {
	if j.MaxRuns < 0 {
		p.add(path+".max_runs", "must be a whole number of runs from 1 (or left out: no limit), got %d", j.MaxRuns)
	}
}

// validateSchedules checks schedule/schedules, exclude, start_at and
// end_at, copies each named calendar's dates into the job, and refuses a
// job that never fires.
func (j *Job) validateSchedules(p *problems, path string, loc *time.Location, calendars map[string]*Calendar) {
	ok := j.validateSpecs(p, path, loc)
	start, startErr := parseInstant(j.StartAt)
	if startErr != nil {
		p.add(path+".start_at", "%s", startErr)
		ok = false
	}
	end, err := parseInstant(j.EndAt)
	switch {
	case err != nil:
		p.add(path+".end_at", "%s", err)
		ok = false
	case startErr == nil && !start.IsZero() && !end.IsZero() && !end.After(start):
		p.add(path+".end_at", "must be after start_at (%s), got %q", j.StartAt, j.EndAt)
		ok = false
	}
	for k := range j.Exclude {
		ok = j.validateExclude(p, fmt.Sprintf("%s.exclude[%d]", path, k), &j.Exclude[k], loc, calendars) && ok
	}
	if spec, one := j.single(); !ok || one && strings.TrimSpace(spec) == schedule.Manually {
		return
	}
	sched, err := j.buildSchedule(loc)
	if err != nil {
		p.add(path, "%s", err)
		return
	}
	if u, isUnion := sched.(*schedule.Union); isUnion {
		if err := u.Check(); err != nil {
			p.add(path+"."+j.scheduleField(), "%s", err)
		}
	}
}

func (j *Job) scheduleField() string {
	if len(j.Schedules) > 0 {
		return "schedules"
	}
	return "schedule"
}

// validateSpecs checks the schedules themselves; false when the job has
// none that parse.
func (j *Job) validateSpecs(p *problems, path string, loc *time.Location) bool {
	switch {
	case j.Schedule != "" && len(j.Schedules) > 0:
		later := path + ".schedules"
		if p.line(path+".schedule") > p.line(later) {
			later = path + ".schedule"
		}
		p.add(later, "schedule and schedules are mutually exclusive: schedule is the one-item form of schedules")
		return false
	case j.Schedules != nil && len(j.Schedules) == 0:
		p.add(path+".schedules", "must not be empty")
		return false
	case j.Schedule == "" && len(j.Schedules) == 0:
		p.add(path+".schedule", "required")
		return false
	case len(j.Schedules) == 0:
		if _, err := schedule.Parse(j.Schedule, loc); err != nil {
			p.add(path+".schedule", "%s", err)
			return false
		}
		return true
	}
	ok := true
	for k, spec := range j.Schedules {
		sp := path + ".schedules[" + strconv.Itoa(k) + "]"
		if _, err := schedule.Parse(spec, loc); err != nil {
			p.add(sp, "%s", err)
			ok = false
		} else if strings.TrimSpace(spec) == schedule.Manually && len(j.Schedules) > 1 {
			p.add(sp, "%s cannot be combined with other schedules: the job would fire by them anyway", schedule.Manually)
			ok = false
		}
	}
	return ok
}

func (j *Job) validateExclude(p *problems, path string, e *Exclude, loc *time.Location, calendars map[string]*Calendar) bool {
	switch kinds := e.kinds(); len(kinds) {
	case 0:
		p.add(path, "want one of calendar, cron or from/to, e.g. {calendar: holidays}")
		return false
	case 1:
	default:
		p.add(path, "%s are mutually exclusive: write one rule per entry", strings.Join(kinds, " and "))
		return false
	}
	switch {
	case e.Calendar != "":
		cal, known := calendars[e.Calendar]
		if !known {
			p.add(path+".calendar", "unknown calendar %q: declare it under calendars", e.Calendar)
			return false
		}
		if cal == nil {
			return false // its bad date is reported where it is written
		}
		e.Dates = append([]string(nil), cal.Dates...)
	case e.Cron != "":
		if _, err := schedule.NewCronExclusion(e.Cron, loc); err != nil {
			p.add(path+".cron", "%s", err)
			return false
		}
	case e.From == "":
		p.add(path+".from", "required with to")
		return false
	case e.To == "":
		p.add(path+".to", "required with from")
		return false
	default:
		from, err := parseInstant(e.From)
		if err != nil {
			p.add(path+".from", "%s", err)
			return false
		}
		to, err := parseInstant(e.To)
		if err != nil {
			p.add(path+".to", "%s", err)
			return false
		}
		if !to.After(from) {
			p.add(path+".to", "must be after from (%s), got %q", e.From, e.To)
			return false
		}
	}
	return true
}
