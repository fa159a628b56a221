package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/etcdsched/scheduler/config"
)

const composeFile = "compose/compose.yaml"

// What deploy/README.md's "Compose" promises.
var (
	composeEtcd      = []string{"etcd-1", "etcd-2", "etcd-3"}
	composeReplicas  = []string{"scheduler-1", "scheduler-2", "scheduler-3"}
	composeHostPorts = []string{"8080", "8081", "8082"}
)

// loadCompose loads compose.yaml as `docker compose` would, with the
// Compose specification's own loader: schema validation, interpolation,
// YAML anchors and merges, paths resolved against the file's directory,
// and the consistency checks (depends_on, volumes named).
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	return loadComposeFiles(t, nil, composeFile)
}

// loadComposeFiles loads files as `docker compose -f F1 -f F2 ...` would:
// each later file an overlay of the ones before, interpolated from env
// alone (this machine's COMPOSE_* must not change the answer).
func loadComposeFiles(t *testing.T, env []string, files ...string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions(files,
		cli.WithWorkingDirectory(filepath.Dir(files[0])),
		cli.WithEnv(append([]string{}, env...)),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := opts.LoadProject(ctx)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(files, " + "), err)
	}
	return p
}

func TestComposeServices(t *testing.T) {
	p := loadCompose(t)
	got := p.ServiceNames()
	want := slices.Concat(composeEtcd, composeReplicas)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: services %v, want %v", composeFile, got, want)
	}
}

// TestComposeEtcd: three members of one cluster, each advertising the
// name its service has on the compose network, healthy only with a quorum.
func TestComposeEtcd(t *testing.T) {
	p := loadCompose(t)
	var initial []string
	for _, name := range composeEtcd {
		initial = append(initial, fmt.Sprintf("%s=http://%s:2380", name, name))
	}
	pinned := regexp.MustCompile(`^quay\.io/coreos/etcd:v3\.\d+\.\d+$`)
	for _, name := range composeEtcd {
		s := p.Services[name]
		if !pinned.MatchString(s.Image) {
			t.Errorf("%s: image %q, want quay.io/coreos/etcd at a pinned v3 release", name, s.Image)
		}
		flags := etcdFlags(t, name, s.Command)
		for flag, want := range map[string]string{
			"name":                        name,
			"advertise-client-urls":       "http://" + name + ":2379",
			"initial-advertise-peer-urls": "http://" + name + ":2380",
			"listen-client-urls":          "http://0.0.0.0:2379",
			"listen-peer-urls":            "http://0.0.0.0:2380",
			"initial-cluster":             strings.Join(initial, ","),
			"initial-cluster-state":       "new",
			"initial-cluster-token":       "scheduler-compose",
		} {
			if flags[flag] != want {
				t.Errorf("%s: --%s=%q, want %q", name, flag, flags[flag], want)
			}
		}
		if !underVolume(s, flags["data-dir"]) {
			t.Errorf("%s: --data-dir=%s is not on a volume: the member would lose its data with its container", name, flags["data-dir"])
		}
		// The image has no shell: the exec form, etcd's own client.
		hc := s.HealthCheck
		if hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" || path.Base(hc.Test[1]) != "etcdctl" ||
			!slices.Contains(hc.Test, "health") {
			t.Errorf("%s: healthcheck %v, want [CMD etcdctl ... endpoint health]", name, hc)
		}
		// A lone member never becomes healthy: members must start together.
		if len(s.DependsOn) != 0 {
			t.Errorf("%s: depends_on %v: members must start together to form a quorum", name, s.DependsOn)
		}
	}
}

// etcdFlags reads an etcd command line of --name=value flags.
func etcdFlags(t *testing.T, service string, cmd types.ShellCommand) map[string]string {
	t.Helper()
	if len(cmd) == 0 || path.Base(cmd[0]) != "etcd" {
		t.Fatalf("%s: command %q, want etcd first", service, cmd)
	}
	flags := map[string]string{}
	for _, arg := range cmd[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !ok || !strings.HasPrefix(arg, "--") {
			t.Errorf("%s: argument %q, want --flag=value", service, arg)
		}
		flags[name] = value
	}
	return flags
}

// underVolume says whether dir is on one of the service's volumes.
func underVolume(s types.ServiceConfig, dir string) bool {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeVolume && (dir == v.Target || strings.HasPrefix(dir, v.Target+"/")) {
			return true
		}
	}
	return false
}

// TestComposeReplicas: three replicas of the image built from the
// repository's Dockerfile, each with its own id and host port, started
// once etcd is healthy and healthy themselves when /readyz says so.
func TestComposeReplicas(t *testing.T) {
	checkReplicas(t, loadCompose(t))
}

// checkReplicas checks what TestComposeReplicas says of p's replicas.
func checkReplicas(t *testing.T, p *types.Project) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	stageNames := map[string]bool{}
	for _, st := range stages(parseDockerfile(t)) {
		stageNames[st.Name] = true
	}
	var ids, images []string
	for i, name := range composeReplicas {
		s := p.Services[name]
		b := s.Build
		if b == nil || b.Context != root || filepath.Base(b.Dockerfile) != "Dockerfile" {
			t.Errorf("%s: build %+v, want the repository root (%s) and its Dockerfile", name, b, root)
		} else if b.Target != "" && !stageNames[b.Target] {
			t.Errorf("%s: build target %q is not a stage of %s", name, b.Target, dockerfile)
		}
		images = append(images, s.Image)
		ids = append(ids, derefString(s.Environment["SCHEDULER_ID"]))

		cfg, flags := composeConfig(t, s)
		_, port, err := net.SplitHostPort(cfg.API.Listen)
		if err != nil {
			t.Fatalf("%s: api.listen %q: %v", name, cfg.API.Listen, err)
		}
		if len(s.Ports) != 1 || s.Ports[0].HostIP != "127.0.0.1" || s.Ports[0].Published != composeHostPorts[i] ||
			fmt.Sprint(s.Ports[0].Target) != port {
			t.Errorf("%s: ports %+v, want 127.0.0.1:%s published to api.listen's port %s", name, s.Ports, composeHostPorts[i], port)
		}
		want := []string{"CMD", "curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:" + port + "/readyz"}
		if s.HealthCheck == nil || !slices.Equal(s.HealthCheck.Test, want) {
			t.Errorf("%s: healthcheck %v, want %v", name, s.HealthCheck, want)
		}
		for _, etcd := range composeEtcd {
			if d, ok := s.DependsOn[etcd]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s: depends_on %s %+v, want condition %s", name, etcd, d, types.ServiceConditionHealthy)
			}
		}
		if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= cfg.Worker.ShutdownGrace.D() {
			t.Errorf("%s: stop_grace_period %v, want more than worker.shutdown_grace %s", name, s.StopGracePeriod, cfg.Worker.ShutdownGrace.D())
		}
		if flags["id"] != "" {
			ids[i] = flags["id"]
		}
	}
	if len(slices.Compact(slices.Clone(images))) != 1 || images[0] == "" {
		t.Errorf("replicas' images %q: want one image, named, for all three", images)
	}
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != len(composeReplicas) || ids[0] == "" {
		t.Errorf("replicas' ids %q (SCHEDULER_ID or --id): want a distinct one each", ids)
	}
}

// mountSource is the directory of this repository that s mounts at dir,
// read-only: the one mount there (an overlay's mount at the same target
// replaces the first file's).
func mountSource(t *testing.T, s types.ServiceConfig, dir string) string {
	t.Helper()
	var sources []string
	for _, v := range s.Volumes {
		if v.Target == dir {
			if v.Type != types.VolumeTypeBind || !v.ReadOnly {
				t.Errorf("%s: %s mounted as %+v, want a read-only bind mount", s.Name, dir, v)
			}
			sources = append(sources, v.Source)
		}
	}
	if len(sources) != 1 {
		t.Fatalf("%s: %d mounts at %s (%q), want one", s.Name, len(sources), dir, sources)
	}
	return sources[0]
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// composeConfig finds the config file a replica reads (its --config, on a
// read-only bind mount of a directory of this repository), checks it
// names the compose file's etcd members, and returns it loaded by the
// scheduler's own loader with the replica's flags.
func composeConfig(t *testing.T, s types.ServiceConfig) (*config.Config, map[string]string) {
	t.Helper()
	flags := parseArgs(t, s.Command)
	source := mountSource(t, s, path.Dir(flags["config"]))
	cfg, err := config.Load(filepath.Join(source, path.Base(flags["config"])))
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	var want []string
	for _, etcd := range composeEtcd {
		want = append(want, "http://"+etcd+":2379")
	}
	if !slices.Equal(cfg.Cluster.Etcd.Endpoints, want) {
		t.Errorf("%s: cluster.etcd.endpoints %q, want the compose file's members %q", s.Name, cfg.Cluster.Etcd.Endpoints, want)
	}
	if host, _, _ := net.SplitHostPort(cfg.API.Listen); host != "0.0.0.0" && host != "" {
		t.Errorf("%s: api.listen %q: want all interfaces, or the published port reaches nothing", s.Name, cfg.API.Listen)
	}
	return cfg, flags
}

// TestComposeRunsTheExampleJobs: compose's config is config/example.yaml
// but for where etcd and the API are, so the two cannot drift apart.
func TestComposeRunsTheExampleJobs(t *testing.T) {
	p := loadCompose(t)
	got, _ := composeConfig(t, p.Services[composeReplicas[0]])
	example, err := config.Load("../config/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got.Cluster.Etcd.Endpoints = example.Cluster.Etcd.Endpoints
	got.API.Listen = example.API.Listen
	if len(got.Jobs) != len(example.Jobs) {
		t.Fatalf("compose's config has %d jobs, config/example.yaml %d", len(got.Jobs), len(example.Jobs))
	}
	for i := range got.Jobs {
		if a, b := asJSON(t, got.Jobs[i]), asJSON(t, example.Jobs[i]); a != b {
			t.Errorf("compose's jobs[%d] differs from config/example.yaml's:\n%s\nwant\n%s", i, a, b)
		}
	}
	got.Jobs, example.Jobs = nil, nil
	if a, b := asJSON(t, got), asJSON(t, example); a != b {
		t.Errorf("compose's config differs from config/example.yaml beyond cluster.etcd.endpoints and api.listen:\n%s\nwant\n%s", a, b)
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
