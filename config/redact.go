package config

import (
	"maps"
	"slices"
)

// RedactedValue replaces header and env values in Job.Redacted.
const RedactedValue = "<redacted>"

// Redacted returns a deep copy of the job in which every header value and
// every environment value, whether written inline or read from
// headers_file or env_file, is "<redacted>"; names and file paths stay.
// It is the job as shown to someone who may not see secrets (the API
// without the token, the dashboard, logs). The copy shares nothing with j,
// so changing one never changes the other.
func (j Job) Redacted() Job {
	r := j.clone()
	if r.HTTP != nil {
		for name := range r.HTTP.Headers {
			r.HTTP.Headers[name] = RedactedValue
		}
	}
	if r.Exec != nil {
		for name := range r.Exec.Env {
			r.Exec.Env[name] = RedactedValue
		}
	}
	return r
}

// clone copies every slice, map and pointer of the job.
func (j Job) clone() Job {
	j.Resources = slices.Clone(j.Resources)
	j.Schedules = slices.Clone(j.Schedules)
	j.Exclude = slices.Clone(j.Exclude)
	for k := range j.Exclude {
		j.Exclude[k].Dates = slices.Clone(j.Exclude[k].Dates)
	}
	j.Notify = slices.Clone(j.Notify)
	if j.Rate != nil {
		r := *j.Rate
		j.Rate = &r
	}
	if j.Input != nil {
		j.Input = cloneValue(j.Input).(map[string]any)
	}
	if j.ShardInputs != nil {
		items := make([]map[string]any, len(j.ShardInputs))
		for i, in := range j.ShardInputs {
			if in != nil {
				items[i] = cloneValue(in).(map[string]any)
			}
		}
		j.ShardInputs = items
	}
	if j.After != nil {
		a := *j.After
		a.On = slices.Clone(a.On)
		j.After = &a
	}
	if j.HTTP != nil {
		h := *j.HTTP
		h.Headers = maps.Clone(h.Headers)
		h.SuccessCodes = slices.Clone(h.SuccessCodes)
		j.HTTP = &h
	}
	if j.Exec != nil {
		e := *j.Exec
		e.Command = slices.Clone(e.Command)
		e.Env = maps.Clone(e.Env)
		j.Exec = &e
	}
	return j
}

// cloneValue copies a value decoded from YAML: maps and lists all the way
// down, so a job's default input shares nothing with its copy.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = cloneValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneValue(x)
		}
		return out
	default:
		return v
	}
}
