package target

import (
	"os"
	"sort"
)

// baseEnv names the only variables an exec job inherits from the scheduler.
// It is an allowlist, not a denylist, because the scheduler's environment
// holds things a job must not see (SCHEDULER_* flag overrides such as etcd
// credentials, cloud and Kubernetes tokens) and no denylist can know every
// name. These are the ones ordinary programs need to find binaries, a home
// directory, a temp dir, a locale and a time zone.
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// defaultPath is used when the scheduler itself runs without PATH (as in a
// bare container), so commands named without a slash still resolve.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// execEnv layers the run's environment: the base, then the job's env, then
// the SCHEDULER_* values of docs/configuration.md#what-a-target-is-told, which a job cannot override for
// the same reason as the HTTP headers: the fencing token must be trustworthy.
func execEnv(job map[string]string, run Run) []string {
	m := make(map[string]string, len(baseEnv)+len(job)+7)
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			m[k] = v
		}
	}
	if m["PATH"] == "" {
		m["PATH"] = defaultPath
	}
	for k, v := range job {
		m[k] = v
	}
	for _, f := range run.fields() {
		if f.env != "" {
			m[f.env] = f.value
		}
	}
	if len(run.Input) > 0 {
		m["SCHEDULER_INPUT"] = string(run.Input)
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	// Sorted so a job sees the same environment every run.
	sort.Strings(env)
	return env
}
