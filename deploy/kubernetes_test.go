package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// manifestDir holds the Kubernetes manifests; kustomizationFile is in it
// but is not an object the API server stores.
const (
	manifestDir       = "kubernetes"
	kustomizationFile = "kustomization.yaml"
)

// kustomizeNames are the objects of the plain manifests.
var kustomizeNames = names{deployment: "scheduler", configMap: "scheduler-config", etcd: "etcd"}

// renderKustomize builds the manifests the way `kubectl apply -k` does,
// with kustomize's own library, and decodes every object strictly.
func renderKustomize(t *testing.T) objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), manifestDir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", manifestDir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", manifestDir, err)
	}
	objs, err := decodeObjects("kustomize build "+manifestDir, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("kustomize build %s: no objects", manifestDir)
	}
	return objs
}

func kustomizeScheduler(t *testing.T) scheduler {
	t.Helper()
	return newScheduler(t, renderKustomize(t), kustomizeNames)
}

func TestManifestsAreObjects(t *testing.T) {
	// decodeObjects has checked every apiVersion and kind against kinds and
	// decoded each object strictly into its type.
	seen := map[string]object{}
	for _, o := range renderKustomize(t) {
		if o.Name == "" {
			t.Errorf("%s: want metadata.name", o)
		}
		// The config names etcd members by short DNS names, which resolve
		// only within one namespace; kubectl -n or kustomize chooses it.
		if o.Namespace != "" {
			t.Errorf("%s: metadata.namespace %q: leave it to kubectl -n / kustomize", o, o.Namespace)
		}
		key := o.Kind + "/" + o.Name
		if prev, dup := seen[key]; dup {
			t.Errorf("%s: duplicate of %s", o, prev)
		}
		seen[key] = o
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(manifestDir, kustomizationFile))
	if err != nil {
		t.Fatal(err)
	}
	var k types.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
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

func TestConfigMapMountedAtConfigDir(t *testing.T) { kustomizeScheduler(t).checkConfigMount(t) }

func TestArgsAndEnvUseRunFlags(t *testing.T) { kustomizeScheduler(t).checkArgsAndEnv(t) }

func TestReplicas(t *testing.T) { kustomizeScheduler(t).checkReplicas(t, 3) }

func TestProbesReachTheAPI(t *testing.T) { kustomizeScheduler(t).checkProbes(t) }

func TestGracePeriodCoversShutdownGrace(t *testing.T) { kustomizeScheduler(t).checkGracePeriod(t) }

func TestServiceTargetsNamedPort(t *testing.T) { kustomizeScheduler(t).checkService(t) }

func TestServiceAccountExists(t *testing.T) { kustomizeScheduler(t).checkServiceAccount(t) }

// TestEtcdEndpointsNameTheMembers: the config lists exactly the members of
// the example StatefulSet, by the DNS names its headless Service gives them.
func TestEtcdEndpointsNameTheMembers(t *testing.T) { kustomizeScheduler(t).checkEtcdMembers(t) }

func TestPodDisruptionBudgets(t *testing.T) { kustomizeScheduler(t).checkDisruptionBudgets(t) }

// TestPodsAreHardened covers the scheduler and the example etcd alike.
func TestPodsAreHardened(t *testing.T) { kustomizeScheduler(t).checkHardened(t) }

// TestKustomizeSetsImage: the images entry of kustomization.yaml is what
// `kustomize edit set image` changes, so it must name the Deployment's image.
func TestKustomizeSetsImage(t *testing.T) {
	s := kustomizeScheduler(t)
	if got, want := s.container.Image, "ghcr.io/example/scheduler:latest"; got != want {
		t.Errorf("image %q, want %q (kustomization.yaml images)", got, want)
	}
}
