package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kinds maps every apiVersion and kind the manifests and the chart may
// render to its Go type, at the version current clusters serve (policy/v1beta1
// PDBs are gone since Kubernetes 1.25). Anything else fails decoding, so a new
// kind is added here on purpose. nil: no k8s.io/api type exists, and the
// object is decoded into unstructured (a CRD such as ServiceMonitor).
var kinds = map[string]func() any{
	"v1/ServiceAccount":                       func() any { return new(corev1.ServiceAccount) },
	"v1/ConfigMap":                            func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                               func() any { return new(corev1.Secret) },
	"v1/Service":                              func() any { return new(corev1.Service) },
	"apps/v1/Deployment":                      func() any { return new(appsv1.Deployment) },
	"apps/v1/StatefulSet":                     func() any { return new(appsv1.StatefulSet) },
	"policy/v1/PodDisruptionBudget":           func() any { return new(policyv1.PodDisruptionBudget) },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return new(networkingv1.NetworkPolicy) },
	"monitoring.coreos.com/v1/ServiceMonitor": nil,
}

// object is one rendered Kubernetes object.
type object struct {
	Source string // the template or manifest set it was rendered from
	metav1.TypeMeta
	metav1.ObjectMeta
	// Obj is the strictly decoded object: a pointer to its k8s.io/api type,
	// or *unstructured.Unstructured for kinds without one.
	Obj any
}

func (o object) String() string {
	return fmt.Sprintf("%s: %s %q", o.Source, o.Kind, o.Name)
}

type objects []object

// decodeObjects splits a multi-document YAML stream and decodes each
// document strictly: unknown or duplicate fields are errors, as they would
// be for `kubectl apply --validate=strict`.
func decodeObjects(source string, data []byte) (objects, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out objects
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		var head struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if head.APIVersion == "" && head.Kind == "" && len(bytes.TrimSpace(doc)) > 0 {
			var v any
			if err := yaml.Unmarshal(doc, &v); err != nil || v != nil {
				return nil, fmt.Errorf("%s: a document without apiVersion and kind", source)
			}
		}
		if head.Kind == "" {
			continue // empty, or only comments (a template whose condition was false)
		}
		o := object{Source: source, TypeMeta: head.TypeMeta, ObjectMeta: head.ObjectMeta}
		newObj, known := kinds[head.APIVersion+"/"+head.Kind]
		switch {
		case !known:
			return nil, fmt.Errorf("%s: %s %s %q: kind not known to these tests; add it to kinds with its Go type",
				source, head.APIVersion, head.Kind, head.Name)
		case newObj == nil:
			js, err := yaml.YAMLToJSONStrict(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %q: %w", source, head.Kind, head.Name, err)
			}
			u := new(unstructured.Unstructured)
			if err := u.UnmarshalJSON(js); err != nil {
				return nil, fmt.Errorf("%s: %s %q: %w", source, head.Kind, head.Name, err)
			}
			o.Obj = u
		default:
			o.Obj = newObj()
			if err := yaml.UnmarshalStrict(doc, o.Obj); err != nil {
				return nil, fmt.Errorf("%s: %s %q: %w", source, head.Kind, head.Name, err)
			}
		}
		out = append(out, o)
	}
}

// get returns the single object of kind named name.
func get[T any](t *testing.T, objs objects, kind, name string) *T {
	t.Helper()
	var found []*T
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			v, ok := o.Obj.(*T)
			if !ok {
				t.Fatalf("%s: decoded as %T, want %T", o, o.Obj, v)
			}
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s %q, found %d", kind, name, len(found))
	}
	return found[0]
}

// all returns every object of kind.
func all[T any](t *testing.T, objs objects, kind string) []*T {
	t.Helper()
	var found []*T
	for _, o := range objs {
		if o.Kind == kind {
			v, ok := o.Obj.(*T)
			if !ok {
				t.Fatalf("%s: decoded as %T, want %T", o, o.Obj, v)
			}
			found = append(found, v)
		}
	}
	return found
}

// selects reports whether sel selects pods labelled podLabels, with the API
// server's semantics. An empty selector would select every pod in the
// namespace, which is never what a manifest here means, so it selects none.
func selects(t *testing.T, sel *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	if sel == nil || len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("selector %v: %v", sel, err)
		return false
	}
	return s.Matches(labels.Set(podLabels))
}

// portNumber resolves a probe or Service port, written as a number or a
// name, to the container's port number; 0 when nothing matches.
func portNumber(c corev1.Container, p intstr.IntOrString) int {
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	return 0
}

// probeWindow is how long a probe must fail before the kubelet acts, with
// the API server's defaults for fields left out.
func probeWindow(p *corev1.Probe) int {
	period, failures := p.PeriodSeconds, p.FailureThreshold
	if period == 0 {
		period = 10
	}
	if failures == 0 {
		failures = 3
	}
	return int(period * failures)
}

// TestDecodeObjectsIsStrict: a misspelt field or an unknown kind fails the
// decoding the manifest tests rely on, instead of being dropped.
func TestDecodeObjectsIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 3}\n",
		"duplicate field": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {}\ndata: {}\n",
		"unknown kind":    "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: x}\n",
		"no kind":         "metadata: {name: x}\n",
	} {
		if _, err := decodeObjects(name, []byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	objs, err := decodeObjects("ok", []byte("# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	if err != nil || len(objs) != 1 {
		t.Errorf("a comment document and a ConfigMap: got %d objects, %v", len(objs), err)
	}
}
