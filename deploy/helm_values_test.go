package deploy

import (
	"encoding/base64"
	"path"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func (s scheduler) pdb(t *testing.T) *policyv1.PodDisruptionBudget {
	t.Helper()
	return get[policyv1.PodDisruptionBudget](t, s.objs, "PodDisruptionBudget", s.names.deployment)
}

// TestHelmExternalEtcd: with endpoints of an etcd the operator runs, the
// chart renders no etcd of its own and the config dials exactly those
// endpoints; replicas, image tag, jobs and minAvailable come from values,
// and objects are named after the release.
func TestHelmExternalEtcd(t *testing.T) {
	endpoints := []string{"https://etcd-a.infra.svc:2379", "https://etcd-b.infra.svc:2379", "https://etcd-c.infra.svc:2379"}
	values := `
replicaCount: 5
image: {repository: registry.example/ops/scheduler, tag: v1.4.2-exec}
podDisruptionBudget: {minAvailable: 4}
etcd:
  bundled: {enabled: false}
  endpoints: [` + strings.Join(endpoints, ", ") + `]
extraVolumes: [{name: etcd-tls, secret: {secretName: etcd-client}}]
extraVolumeMounts: [{name: etcd-tls, mountPath: /etc/etcd-tls, readOnly: true}]
config:
  cluster:
    etcd:
      prefix: /nightly/
      tls: {ca_file: /etc/etcd-tls/ca.crt, cert_file: /etc/etcd-tls/tls.crt, key_file: /etc/etcd-tls/tls.key}
  resources: [{name: search-api, limit: 2}]
  jobs:
    - name: reindex
      schedule: "*/15 * * * *"
      max_concurrency: 2
      resources: [search-api]
      exec: {command: [/bin/bash, -c, "curl -fsS -X POST http://search:9200/reindex"]}
`
	objs, err := renderChart(t, "nightly", values)
	if err != nil {
		t.Fatal(err)
	}
	n := names{deployment: "nightly-scheduler", configMap: "nightly-scheduler-config"}
	s := newScheduler(t, objs, n)
	s.checkRendering(t)
	s.checkReplicas(t, 5)
	if got, want := s.container.Image, "registry.example/ops/scheduler:v1.4.2-exec"; got != want {
		t.Errorf("image %q, want %q", got, want)
	}
	if got := s.config.Cluster.Etcd.Endpoints; !slices.Equal(got, endpoints) {
		t.Errorf("cluster.etcd.endpoints %q, want %q", got, endpoints)
	}
	if c := s.config.Cluster.Etcd; c.Prefix != "/nightly/" || c.TLS.CAFile != "/etc/etcd-tls/ca.crt" {
		t.Errorf("cluster.etcd: prefix %q, tls %+v; want the values' /nightly/ and TLS files", c.Prefix, c.TLS)
	}
	if len(s.config.Jobs) != 1 || s.config.Jobs[0].Name != "reindex" || s.config.Jobs[0].MaxConcurrency != 2 {
		t.Errorf("jobs %+v: want the values' reindex job with max_concurrency 2", s.config.Jobs)
	}
	for _, o := range objs {
		if o.Kind == "StatefulSet" || strings.Contains(o.Name, "etcd") && o.Kind != "Secret" {
			t.Errorf("%s: rendered although etcd.bundled.enabled is false", o)
		}
	}
	if mv := s.pdb(t).Spec.MinAvailable; mv == nil || mv.IntValue() != 4 {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 4", mv)
	}
	if !slices.ContainsFunc(s.container.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "etcd-tls" && m.MountPath == "/etc/etcd-tls"
	}) {
		t.Errorf("extraVolumeMounts not mounted: %+v", s.container.VolumeMounts)
	}
}

// TestHelmBundledEtcd: a five-member bundled etcd; the endpoints and
// --initial-cluster follow the member count.
func TestHelmBundledEtcd(t *testing.T) {
	s := mustRender(t, "etcd: {bundled: {enabled: true, replicas: 5, storageClassName: fast-ssd}}")
	s.checkEtcdMembers(t)
	if got := len(s.config.Cluster.Etcd.Endpoints); got != 5 {
		t.Errorf("%d endpoints, want 5", got)
	}
	sts := get[appsv1.StatefulSet](t, s.objs, "StatefulSet", s.names.etcd)
	if vct := sts.Spec.VolumeClaimTemplates; len(vct) != 1 || vct[0].Spec.StorageClassName == nil || *vct[0].Spec.StorageClassName != "fast-ssd" {
		t.Errorf("volumeClaimTemplates %+v: want one with storageClassName fast-ssd", vct)
	}
}

// TestHelmServiceMonitor: the ServiceMonitor (a CRD, decoded unstructured)
// selects the chart's Service by its labels and scrapes its named port at
// /metrics, in the release's namespace, with the labels Prometheus selects by.
func TestHelmServiceMonitor(t *testing.T) {
	s := mustRender(t, "serviceMonitor: {enabled: true, interval: 15s, labels: {release: kube-prometheus-stack}}")
	sm := get[unstructured.Unstructured](t, s.objs, "ServiceMonitor", s.names.deployment)
	svc := get[corev1.Service](t, s.objs, "Service", s.names.deployment)
	if sm.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v: want release=kube-prometheus-stack from values", sm.GetLabels())
	}
	sel, _, err := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if err != nil || len(sel) == 0 || !subset(sel, svc.Labels) {
		t.Errorf("ServiceMonitor selector %v (%v) does not select Service %q labelled %v", sel, err, svc.Name, svc.Labels)
	}
	ns, _, err := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
	if err != nil || !slices.Equal(ns, []string{testNamespace}) {
		t.Errorf("namespaceSelector.matchNames %q (%v), want [%s]", ns, err, testNamespace)
	}
	eps, _, err := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if err != nil || len(eps) != 1 {
		t.Fatalf("spec.endpoints %v (%v): want one", eps, err)
	}
	ep, _ := eps[0].(map[string]any)
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep["port"] }) {
		t.Errorf("endpoint port %v is not a named port of Service %q", ep["port"], svc.Name)
	}
	if ep["path"] != "/metrics" || ep["interval"] != "15s" {
		t.Errorf("endpoint path %v interval %v, want /metrics 15s", ep["path"], ep["interval"])
	}
	// The metrics' own job label must win over the scrape job's.
	if ep["honorLabels"] != true {
		t.Errorf("endpoint honorLabels %v, want true", ep["honorLabels"])
	}
}

// TestHelmServiceMonitorProtectedReads: with protect_reads /metrics needs
// the token, so the ServiceMonitor sends it from the same Secret.
func TestHelmServiceMonitorProtectedReads(t *testing.T) {
	s := mustRender(t, "serviceMonitor: {enabled: true}\napiToken: {enabled: true, existingSecret: ops-token, secretKey: api}\nconfig: {api: {protect_reads: true}}")
	sm := get[unstructured.Unstructured](t, s.objs, "ServiceMonitor", s.names.deployment)
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("spec.endpoints %v: want one", eps)
	}
	ep, _ := eps[0].(map[string]any)
	name, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")
	key, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "key")
	if typ, _, _ := unstructured.NestedString(ep, "authorization", "type"); typ != "Bearer" || name != "ops-token" || key != "api" {
		t.Errorf("authorization %v: want Bearer from Secret ops-token key api", ep["authorization"])
	}
	if !s.config.API.ProtectReads {
		t.Errorf("api.protect_reads not passed through from values")
	}
}

// TestHelmTokenSecret: with apiToken enabled the token's Secret (created
// or existing) is mounted read-only and api.token_file names the file the
// mount puts the token's key at.
func TestHelmTokenSecret(t *testing.T) {
	for _, tc := range []struct {
		name, values, secret, key string
		created                   bool
	}{
		{"created", "apiToken: {enabled: true, value: s3cret}", "scheduler-token", "token", true},
		{"existing", "apiToken: {enabled: true, existingSecret: ops-token, secretKey: api}", "ops-token", "api", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustRender(t, tc.values)
			tokenFile := s.config.API.TokenFile
			if tokenFile == "" {
				t.Fatal("api.token_file empty with apiToken.enabled")
			}
			spec := s.deploy.Spec.Template.Spec
			i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == tc.secret
			})
			if i < 0 {
				t.Fatalf("no volume of Secret %q", tc.secret)
			}
			vol := spec.Volumes[i]
			j := slices.IndexFunc(s.container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == vol.Name })
			if j < 0 {
				t.Fatalf("volume %q is not mounted", vol.Name)
			}
			m := s.container.VolumeMounts[j]
			if !m.ReadOnly || m.SubPath != "" {
				t.Errorf("mount %+v: want read-only, without subPath (so a rotated token reaches the pod)", m)
			}
			if !slices.ContainsFunc(vol.Secret.Items, func(k corev1.KeyToPath) bool {
				return k.Key == tc.key && path.Join(m.MountPath, k.Path) == tokenFile
			}) {
				t.Errorf("Secret %q key %q is not mounted at api.token_file %s (items %+v at %s)", tc.secret, tc.key, tokenFile, vol.Secret.Items, m.MountPath)
			}
			var secrets []*corev1.Secret
			for _, o := range s.objs {
				if sec, ok := o.Obj.(*corev1.Secret); ok {
					secrets = append(secrets, sec)
				}
			}
			if !tc.created {
				if len(secrets) != 0 {
					t.Errorf("rendered %d Secrets beside the existing one", len(secrets))
				}
				return
			}
			sec := get[corev1.Secret](t, s.objs, "Secret", tc.secret)
			if got := string(sec.Data[tc.key]); got != "s3cret" {
				t.Errorf("Secret %q key %q = %q, want the values' token", tc.secret, tc.key, got)
			}
		})
	}
}

// TestHelmGeneratedToken: without a value the created Secret holds a long
// random token, not an empty or fixed one.
func TestHelmGeneratedToken(t *testing.T) {
	s := mustRender(t, "apiToken: {enabled: true}")
	sec := get[corev1.Secret](t, s.objs, "Secret", "scheduler-token")
	if got := sec.Data["token"]; len(got) < 32 {
		t.Errorf("generated token %q: want at least 32 characters", base64.StdEncoding.EncodeToString(got))
	}
}

// TestHelmRefusesAmbiguousValues: values that would build a broken or
// surprising cluster fail `helm install` with a message naming the key.
func TestHelmRefusesAmbiguousValues(t *testing.T) {
	for _, tc := range []struct{ values, want string }{
		{"etcd: {endpoints: [http://etcd:2379]}", "not both"},
		{"etcd: {bundled: {enabled: false}}", "embedded etcd"},
		{"etcd: {bundled: {replicas: 4}}", "etcd.bundled.replicas"},
		{"config: {api: {listen: 0.0.0.0:9090}}", "config.api.listen"},
		{"config: {api: {token_file: /x}}", "config.api.token_file"},
		{"config: {cluster: {etcd: {endpoints: [http://x:2379]}}}", "config.cluster.etcd.endpoints"},
	} {
		_, err := renderChart(t, "scheduler", tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %q: error %v, want one mentioning %q", tc.values, err, tc.want)
		}
	}
}
