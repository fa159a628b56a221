package deploy

import (
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	corev1 "k8s.io/api/core/v1"
)

// chartDir is the Helm chart; the tests install it as release
// "scheduler" in namespace testNamespace unless a case says otherwise.
const (
	chartDir      = "helm/scheduler"
	testNamespace = "jobs"
)

// helmNames are the objects of release "scheduler": the chart drops the
// chart name from the full name when the release name already has it.
var helmNames = names{
	deployment: "scheduler",
	configMap:  "scheduler-config",
	etcd:       "scheduler-etcd",
	etcdDomain: "." + testNamespace + ".svc",
}

// renderChart renders the chart as `helm template RELEASE helm/scheduler
// -n jobs -f values.yaml` would, with Helm's own loader and engine, and
// decodes every object strictly. The error is the engine's, for the cases
// that must fail.
func renderChart(t *testing.T, release, values string) (objects, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load %s: %v", chartDir, err)
	}
	vals, err := common.ReadValues([]byte(values))
	if err != nil {
		t.Fatalf("values %q: %v", values, err)
	}
	opts := common.ReleaseOptions{Name: release, Namespace: testNamespace, Revision: 1, IsInstall: true}
	top, err := util.ToRenderValues(ch, vals, opts, common.DefaultCapabilities)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	out, err := engine.Engine{}.RenderWithContext(t.Context(), ch, top)
	if err != nil {
		return nil, err
	}
	var objs objects
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range out {
			if !yield(k) {
				return
			}
		}
	}) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		o, err := decodeObjects(name, []byte(out[name]))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// mustRender renders release "scheduler" with values and checks what every
// rendering must satisfy: the same rules as the plain manifests.
func mustRender(t *testing.T, values string) scheduler {
	t.Helper()
	objs, err := renderChart(t, "scheduler", values)
	if err != nil {
		t.Fatalf("render with %q: %v", values, err)
	}
	s := newScheduler(t, objs, helmNames)
	s.checkRendering(t)
	return s
}

// checkRendering holds the checks the plain manifests pass too.
func (s scheduler) checkRendering(t *testing.T) {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range s.objs {
		// Helm installs into the release's namespace (-n); a namespace in
		// the template would fight it.
		if o.Namespace != "" {
			t.Errorf("%s: metadata.namespace %q: leave it to helm -n", o, o.Namespace)
		}
		if key := o.Kind + "/" + o.Name; seen[key] {
			t.Errorf("%s: duplicate", o)
		} else {
			seen[key] = true
		}
	}
	s.checkConfigMount(t)
	s.checkArgsAndEnv(t)
	s.checkProbes(t)
	s.checkGracePeriod(t)
	s.checkService(t)
	s.checkServiceAccount(t)
	s.checkDisruptionBudgets(t)
	s.checkHardened(t)
	s.checkSpread(t)
}

// checkSpread: replicas spread over nodes (hard) and zones (soft), each
// constraint counting only this release's pods of the current ReplicaSet.
func (s scheduler) checkSpread(t *testing.T) {
	t.Helper()
	tmpl := s.deploy.Spec.Template
	want := map[string]corev1.UnsatisfiableConstraintAction{
		corev1.LabelHostname:     corev1.DoNotSchedule,
		corev1.LabelTopologyZone: corev1.ScheduleAnyway,
	}
	for _, c := range tmpl.Spec.TopologySpreadConstraints {
		if w, ok := want[c.TopologyKey]; ok && c.WhenUnsatisfiable == w && c.MaxSkew == 1 {
			delete(want, c.TopologyKey)
		}
		if !selects(t, c.LabelSelector, tmpl.Labels) {
			t.Errorf("topologySpreadConstraint %s: labelSelector %v does not select the pods %v", c.TopologyKey, c.LabelSelector, tmpl.Labels)
		}
		if !slices.Contains(c.MatchLabelKeys, "pod-template-hash") {
			t.Errorf("topologySpreadConstraint %s: want matchLabelKeys [pod-template-hash], so old pods do not block a rollout", c.TopologyKey)
		}
	}
	for key, action := range want {
		t.Errorf("no topologySpreadConstraint %s with maxSkew 1, %s", key, action)
	}
}

// TestHelmLint runs `helm lint`'s rules, which also render the chart with
// its default values and check Chart.yaml.
func TestHelmLint(t *testing.T) {
	l := lint.RunAll(chartDir, nil, testNamespace)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		} else {
			t.Logf("helm lint: %s", m)
		}
	}
}

// TestHelmDefaults: `helm install scheduler deploy/helm/scheduler` with no
// values runs what the plain manifests run: three replicas against a
// bundled three-member etcd, the app version's image, no token, no
// ServiceMonitor, and a config the binary accepts.
func TestHelmDefaults(t *testing.T) {
	s := mustRender(t, "")
	s.checkReplicas(t, 3)
	s.checkEtcdMembers(t)
	if got, want := s.container.Image, "ghcr.io/example/scheduler:latest"; got != want {
		t.Errorf("image %q, want %q (repository and Chart.yaml appVersion)", got, want)
	}
	if c := s.config; c.Cluster.Etcd.Prefix != "/scheduler/" || c.API.Listen != "0.0.0.0:8080" || c.API.TokenFile != "" || len(c.Jobs) != 0 {
		t.Errorf("config: prefix %q, listen %q, token_file %q, %d jobs; want /scheduler/, 0.0.0.0:8080, none, none",
			c.Cluster.Etcd.Prefix, c.API.Listen, c.API.TokenFile, len(c.Jobs))
	}
	pdb := s.pdb(t)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: minAvailable %v, maxUnavailable %v; want maxUnavailable 1", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
	for _, kind := range []string{"Secret", "ServiceMonitor"} {
		for _, o := range s.objs {
			if o.Kind == kind {
				t.Errorf("%s rendered by default", o)
			}
		}
	}
	if len(s.container.Resources.Limits) != 1 {
		t.Errorf("limits %v: want memory only; a CPU limit throttles lease keepalives", s.container.Resources.Limits)
	}
}
