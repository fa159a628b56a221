package deploy

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcdsched/scheduler/config"
)

const teamValues = `
teams:
  payments.yaml: |
    team: payments
    jobs:
      - name: settle
        schedule: "0 18 * * 1-5"
        http: {url: "http://payments.payments.svc/settle"}
  search.yaml: |
    team: search
    jobs:
      - name: reindex
        schedule: "@daily"
        http: {url: "http://search.search.svc/reindex"}
scopedTokens:
  - name: payments-ci
    existingSecret: payments-ci-token
    secretKey: token
    teams: [payments]
    allow: [read, trigger]
`

// The chart mounts team files under teams/ next to the config, which
// includes them, and each scoped token's Secret as a file the config's
// api.tokens names (docs/configuration.md, "Teams and tokens"). The files
// are laid out as the pod sees them and loaded as the replica would.
func TestHelmTeams(t *testing.T) {
	s := mustRender(t, teamValues)
	spec := s.deploy.Spec.Template.Spec
	vol := func(name string) *corev1.Volume {
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
		if i < 0 {
			t.Fatalf("no volume %q", name)
		}
		return &spec.Volumes[i]
	}
	mount := func(name string) string {
		i := slices.IndexFunc(s.container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name })
		if i < 0 {
			t.Fatalf("no mount of volume %q", name)
		}
		return s.container.VolumeMounts[i].MountPath
	}

	// The config volume as a directory, key by key where its items put them.
	root := t.TempDir()
	cm := get[corev1.ConfigMap](t, s.objs, "ConfigMap", s.names.configMap)
	configDir := filepath.Join(root, mount("config"))
	for _, it := range vol("config").ConfigMap.Items {
		data, ok := cm.Data[it.Key]
		if !ok {
			t.Fatalf("config volume item %q: no such key in the ConfigMap", it.Key)
		}
		file := filepath.Join(configDir, it.Path)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(filepath.Join(configDir, path.Base(s.args["config"])))
	if err != nil {
		t.Fatalf("the config as mounted: %v", err)
	}
	teams := map[string]string{}
	for _, j := range cfg.Jobs {
		teams[j.Name] = j.Team
	}
	if teams["settle"] != "payments" || teams["reindex"] != "search" {
		t.Errorf("jobs by team %v, want settle of payments and reindex of search", teams)
	}

	// The token file api.tokens names is the Secret's key, mounted.
	if len(cfg.API.Tokens) != 1 {
		t.Fatalf("api.tokens %+v, want payments-ci", cfg.API.Tokens)
	}
	tok := cfg.API.Tokens[0]
	if tok.Name != "payments-ci" || !slices.Equal(tok.Teams, []string{"payments"}) || !slices.Equal(tok.Allow, []string{"read", "trigger"}) {
		t.Errorf("api.tokens[0] %+v", tok)
	}
	src := vol("scoped-tokens").Projected.Sources
	if len(src) != 1 || src[0].Secret == nil || src[0].Secret.Name != "payments-ci-token" ||
		len(src[0].Secret.Items) != 1 || src[0].Secret.Items[0].Key != "token" ||
		path.Join(mount("scoped-tokens"), src[0].Secret.Items[0].Path) != tok.File {
		t.Errorf("scoped-tokens volume %+v mounted at %s, want Secret payments-ci-token's key token at %s", src, mount("scoped-tokens"), tok.File)
	}
}
