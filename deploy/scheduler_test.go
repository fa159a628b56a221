package deploy

import (
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/etcdsched/scheduler/config"
)

// runFlags are the flags `scheduler run` accepts (README.md), each
// taking a value. cmd/scheduler's flag set (newRunFlagSet) must match this
// list; it is copied rather than imported because package main cannot be
// imported. Replace it with the real flag set if one moves out of main.
var runFlags = []string{"config", "id", "listen", "etcd-endpoints", "data-dir", "log-level", "log-format"}

// shutdownMargin is what a replica needs after shutdown_grace: cancel the
// runs still going, write their records, release slots, revoke the session.
// A few etcd round trips; the kubelet's SIGKILL must not cut them off.
const shutdownMargin = 5 * time.Second

// minLivenessWindow: a replica is restarted only after this long without
// answering /healthz, so a GC pause or a busy node does not restart it.
const minLivenessWindow = 30

// names are the objects of one rendering of the scheduler: the kustomize
// manifests name them plainly, the chart after its release.
type names struct {
	deployment string // also the Service, the PodDisruptionBudget and the ServiceMonitor
	configMap  string
	etcd       string // the bundled etcd's StatefulSet and headless Service, if any
	// etcdDomain follows "<member>.<service>" in the endpoints: empty for
	// short names that resolve within the namespace, ".<ns>.svc" for the
	// chart, which knows its namespace.
	etcdDomain string
}

// scheduler is the scheduler's Deployment with what it is checked against.
type scheduler struct {
	objs      objects
	names     names
	deploy    *appsv1.Deployment
	container corev1.Container
	args      map[string]string // --flag value, without the dashes
	config    *config.Config    // the ConfigMap's file, parsed by the binary's parser
	configKey string            // its key in the ConfigMap
}

func newScheduler(t *testing.T, objs objects, n names) scheduler {
	t.Helper()
	s := scheduler{objs: objs, names: n}
	s.deploy = get[appsv1.Deployment](t, objs, "Deployment", n.deployment)
	cs := s.deploy.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("Deployment %q: want one container, got %d", n.deployment, len(cs))
	}
	s.container = cs[0]
	s.args = parseArgs(t, s.container.Args)

	cm := get[corev1.ConfigMap](t, objs, "ConfigMap", n.configMap)
	s.configKey = path.Base(s.args["config"])
	data, ok := cm.Data[s.configKey]
	if !ok {
		t.Fatalf("ConfigMap %q has no key %q (the base name of --config %s)", n.configMap, s.configKey, s.args["config"])
	}
	cfg, err := config.Parse(s.configKey, []byte(data))
	if err != nil {
		t.Fatalf("ConfigMap %q: %s is not a valid config:\n%v\n%s", n.configMap, s.configKey, err, data)
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

// checkConfigMount: the ConfigMap is mounted as the directory --config
// reads from, without subPath.
func (s scheduler) checkConfigMount(t *testing.T) {
	t.Helper()
	dir := path.Dir(s.args["config"])
	spec := s.deploy.Spec.Template.Spec
	i := slices.IndexFunc(s.container.VolumeMounts, func(m corev1.VolumeMount) bool {
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
	j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
	switch {
	case j < 0:
		t.Errorf("mount at %s names volume %q, which the pod does not have", dir, m.Name)
	case spec.Volumes[j].ConfigMap == nil || spec.Volumes[j].ConfigMap.Name != s.names.configMap:
		t.Errorf("volume %q mounted at %s is not ConfigMap %q", m.Name, dir, s.names.configMap)
	}
}

// checkArgsAndEnv: the command is the image's, and every SCHEDULER_*
// variable is a flag of scheduler run.
func (s scheduler) checkArgsAndEnv(t *testing.T) {
	t.Helper()
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
	if !slices.ContainsFunc(s.container.Env, func(e corev1.EnvVar) bool {
		return e.Name == "SCHEDULER_ID" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}) {
		t.Errorf("want env SCHEDULER_ID from fieldRef metadata.name, so replica ids name pods")
	}
}

func (s scheduler) checkReplicas(t *testing.T, want int32) {
	t.Helper()
	if r := s.deploy.Spec.Replicas; r == nil || *r != want {
		t.Errorf("Deployment %q: replicas %v, want %d", s.names.deployment, r, want)
	}
	if !selects(t, s.deploy.Spec.Selector, s.deploy.Spec.Template.Labels) {
		t.Errorf("Deployment %q: selector %v does not match its pod labels %v",
			s.names.deployment, s.deploy.Spec.Selector, s.deploy.Spec.Template.Labels)
	}
}

// checkProbes: readiness on /readyz, liveness (and startup) on /healthz,
// all on the port api.listen binds on every interface.
func (s scheduler) checkProbes(t *testing.T) {
	t.Helper()
	port := s.listenPort(t)
	// The kubelet probes the pod IP; a loopback listener never answers it.
	host, _, _ := net.SplitHostPort(s.config.API.Listen)
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		t.Errorf("api.listen %q: want 0.0.0.0, [::] or an empty host so probes reach it", s.config.API.Listen)
	}
	if listen, ok := s.args["listen"]; ok {
		t.Errorf("--listen %s overrides api.listen; keep the port in one place", listen)
	}
	if !slices.ContainsFunc(s.container.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == "http" && int(p.ContainerPort) == port
	}) {
		t.Errorf("want containerPort %d named http (api.listen %s)", port, s.config.API.Listen)
	}
	probes := []struct {
		name string
		p    *corev1.Probe
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
		if got := portNumber(s.container, pr.p.HTTPGet.Port); got != port {
			t.Errorf("%s: port %s is %d, want %d (api.listen %s)", pr.name, pr.p.HTTPGet.Port.String(), got, port, s.config.API.Listen)
		}
	}
	if lp := s.container.LivenessProbe; lp != nil && probeWindow(lp) < minLivenessWindow {
		t.Errorf("livenessProbe restarts after %ds without an answer, want at least %ds", probeWindow(lp), minLivenessWindow)
	}
}

func (s scheduler) checkGracePeriod(t *testing.T) {
	t.Helper()
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

// checkService: a ClusterIP Service selecting the pods, on the named port.
func (s scheduler) checkService(t *testing.T) {
	t.Helper()
	svc := get[corev1.Service](t, s.objs, "Service", s.names.deployment)
	where := "Service " + strconv.Quote(svc.Name)
	if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("%s: type %q, want ClusterIP", where, svc.Spec.Type)
	}
	podLabels := s.deploy.Spec.Template.Labels
	if len(svc.Spec.Selector) == 0 || !subset(svc.Spec.Selector, podLabels) {
		t.Errorf("%s: selector %v does not select the pods %v", where, svc.Spec.Selector, podLabels)
	}
	if len(svc.Spec.Ports) == 0 {
		t.Fatalf("%s: no ports", where)
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.Type != intstr.String || p.TargetPort.StrVal == "" {
			t.Errorf("%s: port %d targets %s; name the container port so the two cannot drift", where, p.Port, p.TargetPort.String())
			continue
		}
		if got, want := portNumber(s.container, p.TargetPort), s.listenPort(t); got != want {
			t.Errorf("%s: targetPort %s is %d, want api.listen's %d", where, p.TargetPort.String(), got, want)
		}
	}
}

func (s scheduler) checkServiceAccount(t *testing.T) {
	t.Helper()
	name := s.deploy.Spec.Template.Spec.ServiceAccountName
	if name == "" {
		t.Fatal("Deployment runs as the namespace's default ServiceAccount; give it its own")
	}
	get[corev1.ServiceAccount](t, s.objs, "ServiceAccount", name)
}

// subset reports whether every key of sel is in labels with the same value.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
