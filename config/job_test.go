package config

import (
	"fmt"
	"testing"
)

// Job answers from the index Parse builds, and still answers right for a
// Config whose jobs were changed or built by hand after it (tests and
// helpers append jobs; a stale index must not name the wrong job).
func TestJobFindsEveryJobIndexedOrNot(t *testing.T) {
	var src string
	for i := range 50 {
		src += fmt.Sprintf("  - {name: j%d, schedule: \"@every 1m\", exec: {command: [\"true\"]}}\n", i)
	}
	cfg, err := Parse("jobs.yaml", []byte("jobs:\n"+src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.byName) != 50 {
		t.Fatalf("Parse indexed %d jobs, want 50", len(cfg.byName))
	}
	check := func(when string, c *Config) {
		t.Helper()
		for i := range c.Jobs {
			if got := c.Job(c.Jobs[i].Name); got != &c.Jobs[i] {
				t.Errorf("%s: Job(%q) = %p, want %p", when, c.Jobs[i].Name, got, &c.Jobs[i])
			}
		}
		if got := c.Job("nope"); got != nil {
			t.Errorf("%s: Job(nope) = %+v, want nil", when, got)
		}
	}
	check("parsed", cfg)

	cfg.Jobs[0], cfg.Jobs[49] = cfg.Jobs[49], cfg.Jobs[0]
	cfg.Jobs = append(cfg.Jobs[:10], cfg.Jobs[11:]...)
	cfg.Jobs = append(cfg.Jobs, Job{Name: "late"})
	check("changed by hand", cfg)
	check("built by hand", &Config{Jobs: []Job{{Name: "a"}, {Name: "b"}}})
}
