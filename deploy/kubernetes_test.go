package deploy

import (
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/etcdsched/scheduler/config"
)

// runFlags are the flags `scheduler run` accepts (SPEC section 2), each
// taking a value. cmd/scheduler's flag set (newRunFlagSet) must match this
// list; it is copied rather than imported because package main cannot be
// imported. Replace it with the real flag set if one moves out of main.
var runFlags = []string{"config", "id", "listen", "etcd-endpoints", "data-dir", "log-level", "log-format"}

// The objects the scheduler manifests are made of.
const (
	schedulerDeployment = "scheduler"
	schedulerConfigMap  = "scheduler-config"
	etcdStatefulSet     = "etcd"
)

// shutdownMargin is what a replica needs after shutdown_grace: cancel the
// runs still going, write their records, release slots, revoke the session.
// A few etcd round trips; the kubelet's SIGKILL must not cut them off.
const shutdownMargin = 5 * time.Second

// minLivenessWindow: a replica is restarted only after this long without
// answering /healthz, so a GC pause or a busy node does not restart it.
const minLivenessWindow = 30

// scheduler is the scheduler's Deployment with what it is checked against.
type scheduler struct {
	docs      []document
	deploy    deployment
	container container
	args      map[string]string // --flag value, without the dashes
	config    *config.Config    // the ConfigMap's file, parsed by the binary's parser
	configKey string            // its key in the ConfigMap
}

func loadScheduler(t *testing.T) scheduler {
	t.Helper()
	s := scheduler{docs: loadManifests(t)}
	d := find(t, s.docs, "Deployment", schedulerDeployment, &s.deploy)
	cs := s.deploy.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%s: want one container, got %d", d, len(cs))
	}
	s.container = cs[0]
	s.args = parseArgs(t, s.container.Args)

	var cm configMap
	find(t, s.docs, "ConfigMap", schedulerConfigMap, &cm)
	s.configKey = path.Base(s.args["config"])
	data, ok := cm.Data[s.configKey]
	if !ok {
		t.Fatalf("ConfigMap %q has no key %q (the base name of --config %s)", schedulerConfigMap, s.configKey, s.args["config"])
	}
	cfg, err := config.Parse(s.configKey, []byte(data))
	if err != nil {
		t.Fatalf("ConfigMap %q: %s is not a valid config:\n%v", schedulerConfigMap, s.configKey, err)
	}
	s.config = cfg
	return s
}

// listenPort is the port of api.listen, which the probes must reach.
func (s scheduler) listenPort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(s.config.API.Listen)
	if err != nil {
		t.Fatalf("api.listen %q: %v", s.config.API.Listen, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("api.listen %q: port: %v", s.config.API.Listen, err)
	}
	return n
}

// parseArgs checks a `scheduler run` command line and returns its flags.
func parseArgs(t *testing.T, args []string) map[string]string {
	t.Helper()
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("args %q: want the run command first", args)
	}
	flags := map[string]string{}
	for i := 1; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			t.Errorf("args %q: unexpected argument %q", args, arg)
			continue
		}
		// Go's flag package takes -name and --name, with "=value" or the
		// value as the next argument.
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !slices.Contains(runFlags, name) {
			t.Errorf("args %q: flag %q is not one of scheduler run's %q", args, arg, runFlags)
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				t.Errorf("args %q: flag %q needs a value", args, arg)
				continue
			}
			i++
			value = args[i]
		}
		flags[name] = value
	}
	if flags["config"] == "" {
		t.Fatalf("args %q: no --config", args)
	}
	return flags
}

func TestManifestsAreObjects(t *testing.T) {
	// Each kind at the version current clusters serve (policy/v1beta1 PDBs
	// are gone since Kubernetes 1.25).
	versions := map[string]string{
		"Namespace":           "v1",
		"ServiceAccount":      "v1",
		"ConfigMap":           "v1",
		"Secret":              "v1",
		"Service":             "v1",
		"Deployment":          "apps/v1",
		"StatefulSet":         "apps/v1",
		"PodDisruptionBudget": "policy/v1",
		"NetworkPolicy":       "networking.k8s.io/v1",
	}
	seen := map[string]document{}
	for _, d := range loadManifests(t) {
		if d.APIVersion == "" || d.Kind == "" || d.Metadata.Name == "" {
			t.Errorf("%s: want apiVersion, kind and metadata.name", d)
			continue
		}
		if want, ok := versions[d.Kind]; !ok {
			t.Errorf("%s: kind not known to this test; add it with its apiVersion", d)
		} else if d.APIVersion != want {
			t.Errorf("%s: apiVersion %q, want %q", d, d.APIVersion, want)
		}
		// The config names etcd members by short DNS names, which resolve
		// only within one namespace; kubectl -n or kustomize chooses it.
		if d.Metadata.Namespace != "" {
			t.Errorf("%s: metadata.namespace %q: leave it to kubectl -n / kustomize", d, d.Metadata.Namespace)
		}
		key := d.Kind + "/" + d.Metadata.Name
		if prev, dup := seen[key]; dup {
			t.Errorf("%s: duplicate of %s", d, prev)
		}
		seen[key] = d
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(manifestDir, kustomizationFile))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("%s: %v", kustomizationFile, err)
	}
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != kustomizationFile {
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("%s resources = %q, want every manifest: %q", kustomizationFile, got, want)
	}
}

func TestConfigMapMountedAtConfigDir(t *testing.T) {
	s := loadScheduler(t)
	dir := path.Dir(s.args["config"])
	spec := s.deploy.Spec.Template.Spec
	i := slices.IndexFunc(s.container.VolumeMounts, func(m volumeMount) bool {
		return path.Clean(m.MountPath) == dir
	})
	if i < 0 {
		t.Fatalf("no volume mounted at %s, the directory of --config %s", dir, s.args["config"])
	}
	m := s.container.VolumeMounts[i]
	// A subPath mount is a copy the kubelet never updates.
	if m.SubPath != "" {
		t.Errorf("mount at %s uses subPath %q: ConfigMap edits would never reach the pod", dir, m.SubPath)
	}
	j := slices.IndexFunc(spec.Volumes, func(v volume) bool {
		return v.Name == m.Name
	})
	switch {
	case j < 0:
		t.Errorf("mount at %s names volume %q, which the pod does not have", dir, m.Name)
	case spec.Volumes[j].ConfigMap == nil || spec.Volumes[j].ConfigMap.Name != schedulerConfigMap:
		t.Errorf("volume %q mounted at %s is not ConfigMap %q", m.Name, dir, schedulerConfigMap)
	}
}

func TestArgsAndEnvUseRunFlags(t *testing.T) {
	s := loadScheduler(t) // parseArgs checks the args themselves
	// An empty command runs the image's ENTRYPOINT, /scheduler.
	if c := s.container.Command; len(c) > 0 && !slices.Equal(c, []string{"/scheduler"}) {
		t.Errorf("command %q: want none (the image's ENTRYPOINT) or [/scheduler]", c)
	}
	for _, e := range s.container.Env {
		name, ok := strings.CutPrefix(e.Name, "SCHEDULER_")
		if !ok {
			continue
		}
		flag := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		if !slices.Contains(runFlags, flag) {
			t.Errorf("env %s matches no flag of scheduler run %q", e.Name, runFlags)
		}
	}
	if !slices.ContainsFunc(s.container.Env, func(e envVar) bool {
		return e.Name == "SCHEDULER_ID" && e.fieldPath() == "metadata.name"
	}) {
		t.Errorf("want env SCHEDULER_ID from fieldRef metadata.name, so replica ids name pods")
	}
}

func TestReplicas(t *testing.T) {
	s := loadScheduler(t)
	if r := s.deploy.Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("Deployment %q: want replicas: 3", schedulerDeployment)
	}
	if !s.deploy.Spec.Selector.matches(s.deploy.Spec.Template.Metadata.Labels) {
		t.Errorf("Deployment %q: selector %v does not match its pod labels %v",
			schedulerDeployment, s.deploy.Spec.Selector.MatchLabels, s.deploy.Spec.Template.Metadata.Labels)
	}
}

func TestProbesReachTheAPI(t *testing.T) {
	s := loadScheduler(t)
	port := s.listenPort(t)
	// The kubelet probes the pod IP; a loopback listener never answers it.
	host, _, _ := net.SplitHostPort(s.config.API.Listen)
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		t.Errorf("api.listen %q: want 0.0.0.0, [::] or an empty host so probes reach it", s.config.API.Listen)
	}
	if listen, ok := s.args["listen"]; ok {
		t.Errorf("--listen %s overrides api.listen; keep the port in one place", listen)
	}
	if !slices.ContainsFunc(s.container.Ports, func(p containerPort) bool {
		return p.Name == "http" && p.ContainerPort == port
	}) {
		t.Errorf("want containerPort %d named http (api.listen %s)", port, s.config.API.Listen)
	}

	probes := []struct {
		name string
		p    *probe
		path string
	}{
		// /readyz turns 503 while etcd is unreachable: out of the Service.
		{"readinessProbe", s.container.ReadinessProbe, "/readyz"},
		// /healthz stays 200 then: an etcd outage must not restart replicas.
		{"livenessProbe", s.container.LivenessProbe, "/healthz"},
		{"startupProbe", s.container.StartupProbe, "/healthz"},
	}
	for _, pr := range probes {
		if pr.p == nil {
			if pr.name != "startupProbe" {
				t.Errorf("%s: missing", pr.name)
			}
			continue
		}
		if pr.p.HTTPGet == nil {
			t.Errorf("%s: want httpGet %s", pr.name, pr.path)
			continue
		}
		if got := pr.p.HTTPGet.Path; got != pr.path {
			t.Errorf("%s: path %q, want %q", pr.name, got, pr.path)
		}
		if got := s.container.port(pr.p.HTTPGet.Port); got != port {
			t.Errorf("%s: port %s is %d, want %d (api.listen %s)", pr.name, pr.p.HTTPGet.Port, got, port, s.config.API.Listen)
		}
	}
	if lp := s.container.LivenessProbe; lp != nil && lp.window() < minLivenessWindow {
		t.Errorf("livenessProbe restarts after %ds without an answer, want at least %ds", lp.window(), minLivenessWindow)
	}
}

func TestGracePeriodCoversShutdownGrace(t *testing.T) {
	s := loadScheduler(t)
	tgp := s.deploy.Spec.Template.Spec.TerminationGracePeriodSeconds
	if tgp == nil {
		t.Fatal("terminationGracePeriodSeconds not set; the default 30s is not above the default shutdown_grace 30s")
	}
	// config.Parse read it with time.ParseDuration and applied the default.
	grace := s.config.Worker.ShutdownGrace.D()
	if got, want := time.Duration(*tgp)*time.Second, grace+shutdownMargin; got < want {
		t.Errorf("terminationGracePeriodSeconds %d: want at least %s (worker.shutdown_grace %s + %s to release slots and revoke the session)",
			*tgp, want, grace, shutdownMargin)
	}
}

func TestServiceTargetsNamedPort(t *testing.T) {
	s := loadScheduler(t)
	var svc service
	d := find(t, s.docs, "Service", schedulerDeployment, &svc)
	if svc.Spec.Type != "" && svc.Spec.Type != "ClusterIP" {
		t.Errorf("%s: type %q, want ClusterIP", d, svc.Spec.Type)
	}
	labels := s.deploy.Spec.Template.Metadata.Labels
	if len(svc.Spec.Selector) == 0 || !subset(svc.Spec.Selector, labels) {
		t.Errorf("%s: selector %v does not select the pods %v", d, svc.Spec.Selector, labels)
	}
	if len(svc.Spec.Ports) == 0 {
		t.Fatalf("%s: no ports", d)
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.Name == "" {
			t.Errorf("%s: port %d targets %s; name the container port so the two cannot drift", d, p.Port, p.TargetPort)
			continue
		}
		if got, want := s.container.port(p.TargetPort), s.listenPort(t); got != want {
			t.Errorf("%s: targetPort %s is %d, want api.listen's %d", d, p.TargetPort, got, want)
		}
	}
}

func TestServiceAccountExists(t *testing.T) {
	s := loadScheduler(t)
	name := s.deploy.Spec.Template.Spec.ServiceAccountName
	if name == "" {
		t.Fatal("Deployment runs as the namespace's default ServiceAccount; give it its own")
	}
	var sa struct{}
	find(t, s.docs, "ServiceAccount", name, &sa)
}
