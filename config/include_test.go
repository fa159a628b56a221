package config

import (
	"slices"
	"strings"
	"testing"
)

// Team files are merged into one config: each job carries its file's
// team, a team's notify.default becomes its jobs' sinks, and every file
// is listed with its own hash (docs/configuration.md, "Teams and tokens").
func TestIncludeMergesTeamFiles(t *testing.T) {
	cfg, err := Load("testdata/teams/good/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	teams := map[string]string{}
	for _, j := range cfg.Jobs {
		teams[j.Name] = j.Team
	}
	want := map[string]string{"cleanup": "", "settle": "payments", "quiet": "payments", "reindex": "search"}
	for name, team := range want {
		if got, ok := teams[name]; !ok || got != team {
			t.Errorf("job %s: team %q (present %v), want %q", name, got, ok, team)
		}
	}
	sinks := func(job string) []string {
		var out []string
		for _, s := range cfg.SinksOf(cfg.Job(job)) {
			out = append(out, s.Name)
		}
		return out
	}
	if got := sinks("settle"); !slices.Equal(got, []string{"payments-oncall"}) {
		t.Errorf("settle notifies %v, want its team's default [payments-oncall]", got)
	}
	if got := sinks("reindex"); !slices.Equal(got, []string{"ops"}) {
		t.Errorf("reindex (a team without a default) notifies %v, want the cluster's [ops]", got)
	}
	if got := sinks("quiet"); len(got) != 0 {
		t.Errorf("quiet names no sink and notifies %v", got)
	}
	// A path in a team file is relative to that file.
	if got := cfg.Sink("payments-oncall").Headers["X-Team-Key"]; got != "k" {
		t.Errorf("payments-oncall's headers_file, next to its team file: X-Team-Key %q, want k", got)
	}
	var files []string
	for _, f := range cfg.Files {
		if len(f.Hash) != 12 {
			t.Errorf("file %s has hash %q", f.Path, f.Hash)
		}
		files = append(files, f.Path+"="+f.Team)
	}
	wantFiles := []string{"testdata/teams/good/config.yaml=", "testdata/teams/good/teams/payments.yaml=payments", "testdata/teams/good/teams/search.yaml=search"}
	if !slices.Equal(files, wantFiles) {
		t.Errorf("files %v, want %v", files, wantFiles)
	}
}

// Names are unique across files, and a problem in a team file names that
// file and the line in it.
func TestIncludeProblemsNameTheirFile(t *testing.T) {
	cases := map[string][]string{
		"testdata/teams/dup/config.yaml": {
			`testdata/teams/dup/teams/payments.yaml:6:11: jobs[1].name: duplicate job name "settle" (first at testdata/teams/dup/config.yaml:4)`,
			`testdata/teams/dup/teams/search.yaml:3:11: jobs[0].name: duplicate job name "report" (first at testdata/teams/dup/teams/payments.yaml:3)`,
			`testdata/teams/dup/teams/search.yaml:7:15: jobs[1] "reindex": schedule: expected 5 or 6 fields, got 2`,
		},
		"testdata/teams/broken/config.yaml": {
			`testdata/teams/broken/teams/ops.yaml:1:7: team: invalid team name "Ops Team": want ` + NamePattern,
			`testdata/teams/broken/teams/ops.yaml:2:1: unknown field "cluster"`,
			`testdata/teams/broken/teams/ops.yaml:4:13: notify.default[0]: unknown sink "nowhere": declare it under notify.sinks of this file or of the main file`,
			`testdata/teams/broken/teams/ops.yaml:8:5: jobs[0] "ok": unknown field "team"`,
		},
	}
	for file, want := range cases {
		_, err := Load(file)
		if err == nil {
			t.Errorf("%s: loaded, want %d problems", file, len(want))
			continue
		}
		if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", file, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
	}
}
