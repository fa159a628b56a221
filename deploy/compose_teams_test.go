package deploy

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/etcdsched/scheduler/config"
)

const composeTeamsFile = "compose/compose.teams.yaml"

// The teams of compose/teams-config/teams/, by job, as deploy/README.md's
// "Compose" and docs/teams.md show them.
var composeTeamJobs = map[string]string{"self-check": "", "settle": "payments", "reconcile": "payments", "reindex": "search"}

// TestComposeTeams: with compose.teams.yaml over compose.yaml, each replica
// reads a main file that includes the team files of a teams/ directory
// mounted beside it, and finds every token file its api section names at
// /run/secrets/NAME, a compose secret from a file the operator created
// (here temporary files, through $SCHEDULER_SECRETS: no token is
// committed). The config is loaded by the scheduler's own loader from the
// mount's source, as the replica sees it; the replicas and the cluster
// are otherwise compose.yaml's (TestComposeReplicas' checks hold).
func TestComposeTeams(t *testing.T) {
	secrets := t.TempDir()
	for _, name := range []string{"admin", "payments-ci", "viewer"} {
		if err := os.WriteFile(filepath.Join(secrets, name), []byte("token-of-"+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := loadComposeFiles(t, []string{"SCHEDULER_SECRETS=" + secrets}, composeFile, composeTeamsFile)
	checkReplicas(t, p)
	base, _ := composeConfig(t, loadCompose(t).Services[composeReplicas[0]])
	for _, name := range composeReplicas {
		s := p.Services[name]
		cfg, flags := composeConfig(t, s)
		// The same cluster as compose.yaml's, so the two cannot drift apart.
		if a, b := asJSON(t, []any{cfg.Cluster, cfg.Worker, cfg.API.Listen}), asJSON(t, []any{base.Cluster, base.Worker, base.API.Listen}); a != b {
			t.Errorf("%s: cluster, worker and api.listen differ from config/jobs.yaml's:\n%s\nwant\n%s", name, a, b)
		}
		source := mountSource(t, s, path.Dir(flags["config"]))
		teams := map[string]string{}
		for _, j := range cfg.Jobs {
			teams[j.Name] = j.Team
		}
		if len(cfg.Include) == 0 || len(cfg.Files) < 2 || !maps.Equal(teams, composeTeamJobs) {
			t.Errorf("%s: include %q, files %+v, jobs by team %v; want team files included, jobs %v",
				name, cfg.Include, cfg.Files, teams, composeTeamJobs)
		}
		for _, f := range cfg.Files {
			if rel, err := filepath.Rel(source, f.Path); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: %s is not under the mount of %s: the replica cannot read it", name, f.Path, source)
			}
		}
		files := map[string]string{config.AdminToken: cfg.API.TokenFile}
		for _, tok := range cfg.API.Tokens {
			files[tok.Name] = tok.File
		}
		if len(files) != 3 || files[config.AdminToken] == "" {
			t.Errorf("%s: token files %v, want the admin's and two scoped tokens'", name, files)
		}
		for token, file := range files {
			host := secretFile(t, p, s, file)
			if b, err := os.ReadFile(host); err != nil || strings.TrimSpace(string(b)) == "" {
				t.Errorf("%s: token %q: %s is the secret of %s, which holds no token (%v)", name, token, file, host, err)
			}
		}
	}
}

// secretFile is the host file behind the secret s finds at file, a path
// in the container; it fails the test when no secret of s is mounted there.
func secretFile(t *testing.T, p *types.Project, s types.ServiceConfig, file string) string {
	t.Helper()
	for _, ref := range s.Secrets {
		target := ref.Target
		if target == "" {
			target = ref.Source
		}
		if !path.IsAbs(target) {
			target = path.Join("/run/secrets", target)
		}
		if target != file {
			continue
		}
		def, ok := p.Secrets[ref.Source]
		if !ok || def.File == "" {
			t.Fatalf("%s: secret %q at %s: want one defined from a file, got %+v", s.Name, ref.Source, file, def)
		}
		return def.File
	}
	t.Fatalf("%s: no secret is mounted at %s, which the config reads a token from (secrets %+v)", s.Name, file, s.Secrets)
	return ""
}

// The example files stand for what an operator commits: team files and
// the main file, never a token. The secrets' default directory is
// ignored by git, so a token written there cannot be committed by
// mistake.
func TestComposeTeamsCommitsNoToken(t *testing.T) {
	p := loadComposeFiles(t, nil, composeFile, composeTeamsFile)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(ignore), "\n")
	for name, def := range p.Secrets {
		rel, err := filepath.Rel(root, filepath.Dir(def.File))
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("secret %q: %s, want a directory of the repository by default", name, def.File)
			continue
		}
		if want := "/" + filepath.ToSlash(rel) + "/"; !slices.Contains(lines, want) {
			t.Errorf("secret %q: %s is in the repository, and .gitignore has no line %q", name, def.File, want)
		}
	}
}
