package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"go.yaml.in/yaml/v3"
)

// manifestDir holds the Kubernetes manifests; kustomizationFile is in it
// but is not an object the API server stores.
const (
	manifestDir       = "kubernetes"
	kustomizationFile = "kustomization.yaml"
)

// document is one YAML document of a manifest file.
type document struct {
	File       string
	Line       int
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
	node       *yaml.Node
}

func (d document) String() string {
	return fmt.Sprintf("%s:%d: %s %q", d.File, d.Line, d.Kind, d.Metadata.Name)
}

// into decodes the whole document into one of the object types below.
func (d document) into(t *testing.T, v any) {
	t.Helper()
	if err := d.node.Decode(v); err != nil {
		t.Fatalf("%s: %v", d, err)
	}
}

type meta struct {
	Name      string            `yaml:"name"`
	Namespace string            `yaml:"namespace"`
	Labels    map[string]string `yaml:"labels"`
}

// loadManifests reads every document of every manifest file.
func loadManifests(t *testing.T) []document {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []document
	for _, file := range files {
		if filepath.Base(file) == kustomizationFile {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if len(n.Content) == 0 || n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null" {
				continue // an empty document between two "---"
			}
			d := document{File: file, Line: n.Content[0].Line, node: &n}
			if err := n.Decode(&d); err != nil {
				t.Fatalf("%s:%d: %v", file, d.Line, err)
			}
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("no manifests in %s", manifestDir)
	}
	return docs
}

// find returns the single object of kind named name, decoded into v.
func find(t *testing.T, docs []document, kind, name string, v any) document {
	t.Helper()
	i := slices.IndexFunc(docs, func(d document) bool { return d.Kind == kind && d.Metadata.Name == name })
	if i < 0 {
		t.Fatalf("no %s %q in %s", kind, name, manifestDir)
	}
	docs[i].into(t, v)
	return docs[i]
}

// only returns the single object of kind, decoded into v.
func only(t *testing.T, docs []document, kind string, v any) document {
	t.Helper()
	var found []document
	for _, d := range docs {
		if d.Kind == kind {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s in %s, found %d", kind, manifestDir, len(found))
	}
	found[0].into(t, v)
	return found[0]
}

// The subset of the Kubernetes API types the tests read. Kept small on
// purpose: k8s.io/api is not a dependency of the module.

type deployment struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		Replicas *int          `yaml:"replicas"`
		Selector labelSelector `yaml:"selector"`
		Template podTemplate   `yaml:"template"`
	} `yaml:"spec"`
}

type statefulSet struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		Replicas             *int          `yaml:"replicas"`
		ServiceName          string        `yaml:"serviceName"`
		PodManagementPolicy  string        `yaml:"podManagementPolicy"`
		Selector             labelSelector `yaml:"selector"`
		Template             podTemplate   `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata meta `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

type podTemplate struct {
	Metadata meta    `yaml:"metadata"`
	Spec     podSpec `yaml:"spec"`
}

type podSpec struct {
	ServiceAccountName            string             `yaml:"serviceAccountName"`
	TerminationGracePeriodSeconds *int               `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               *securityContext   `yaml:"securityContext"`
	TopologySpreadConstraints     []spreadConstraint `yaml:"topologySpreadConstraints"`
	Affinity                      *struct {
		PodAntiAffinity map[string]any `yaml:"podAntiAffinity"`
	} `yaml:"affinity"`
	Containers []container `yaml:"containers"`
	Volumes    []volume    `yaml:"volumes"`
}

type spreadConstraint struct {
	TopologyKey       string        `yaml:"topologyKey"`
	WhenUnsatisfiable string        `yaml:"whenUnsatisfiable"`
	LabelSelector     labelSelector `yaml:"labelSelector"`
}

type volume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
}

type securityContext struct {
	RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
	RunAsUser                *int  `yaml:"runAsUser"`
	ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	Capabilities             *struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

type container struct {
	Name            string           `yaml:"name"`
	Image           string           `yaml:"image"`
	Command         []string         `yaml:"command"`
	Args            []string         `yaml:"args"`
	Env             []envVar         `yaml:"env"`
	Ports           []containerPort  `yaml:"ports"`
	StartupProbe    *probe           `yaml:"startupProbe"`
	ReadinessProbe  *probe           `yaml:"readinessProbe"`
	LivenessProbe   *probe           `yaml:"livenessProbe"`
	SecurityContext *securityContext `yaml:"securityContext"`
	Resources       struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []volumeMount `yaml:"volumeMounts"`
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		FieldRef *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
	} `yaml:"valueFrom"`
}

// fieldPath is the downward API field the variable is set from, if any.
func (e envVar) fieldPath() string {
	if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
		return ""
	}
	return e.ValueFrom.FieldRef.FieldPath
}

type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	SubPath   string `yaml:"subPath"`
}

// port resolves a probe or Service port, written as a number or a name, to
// the container's port number; 0 when nothing matches.
func (c container) port(p intOrString) int {
	if p.Name == "" {
		return p.Number
	}
	for _, cp := range c.Ports {
		if cp.Name == p.Name {
			return cp.ContainerPort
		}
	}
	return 0
}

type probe struct {
	HTTPGet *struct {
		Path string      `yaml:"path"`
		Port intOrString `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

// window is how long the probe must fail before the kubelet acts, with
// the API server's defaults for fields left out.
func (p probe) window() int {
	period, failures := p.PeriodSeconds, p.FailureThreshold
	if period == 0 {
		period = 10
	}
	if failures == 0 {
		failures = 3
	}
	return period * failures
}

type service struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		Type                     string            `yaml:"type"`
		ClusterIP                string            `yaml:"clusterIP"`
		PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]string `yaml:"selector"`
		Ports                    []struct {
			Name       string      `yaml:"name"`
			Port       int         `yaml:"port"`
			TargetPort intOrString `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type podDisruptionBudget struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		MinAvailable   *intOrString  `yaml:"minAvailable"`
		MaxUnavailable *intOrString  `yaml:"maxUnavailable"`
		Selector       labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type configMap struct {
	Metadata meta              `yaml:"metadata"`
	Data     map[string]string `yaml:"data"`
}

type labelSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []any             `yaml:"matchExpressions"`
}

// matches reports whether the selector selects an object with labels. Only
// matchLabels is understood; a selector with expressions never matches, so
// a test fails rather than passing on something it cannot read.
func (s labelSelector) matches(labels map[string]string) bool {
	if len(s.MatchLabels) == 0 || len(s.MatchExpressions) > 0 {
		return false
	}
	return subset(s.MatchLabels, labels)
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

// intOrString is Kubernetes' IntOrString: a port number or name, or a
// count or percentage.
type intOrString struct {
	Number int
	Name   string
}

func (v *intOrString) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a number or a string", n.Line)
	}
	if n.Tag == "!!int" {
		i, err := strconv.Atoi(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		v.Number = i
		return nil
	}
	v.Name = n.Value
	return nil
}

func (v intOrString) String() string {
	if v.Name != "" {
		return strconv.Quote(v.Name)
	}
	return strconv.Itoa(v.Number)
}
