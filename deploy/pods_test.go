package deploy

import (
	"fmt"
	"slices"
	"testing"
)

func TestPodDisruptionBudgets(t *testing.T) {
	docs := loadManifests(t)
	var sched deployment
	find(t, docs, "Deployment", schedulerDeployment, &sched)
	var etcd statefulSet
	find(t, docs, "StatefulSet", etcdStatefulSet, &etcd)
	workloads := []struct {
		name     string
		replicas *int
		labels   map[string]string
	}{
		{"Deployment " + schedulerDeployment, sched.Spec.Replicas, sched.Spec.Template.Metadata.Labels},
		{"StatefulSet " + etcdStatefulSet, etcd.Spec.Replicas, etcd.Spec.Template.Metadata.Labels},
	}
	for _, w := range workloads {
		var pdbs []podDisruptionBudget
		for _, d := range docs {
			var pdb podDisruptionBudget
			if d.Kind != "PodDisruptionBudget" {
				continue
			}
			d.into(t, &pdb)
			if pdb.Spec.Selector.matches(w.labels) {
				pdbs = append(pdbs, pdb)
			}
		}
		if len(pdbs) != 1 {
			t.Errorf("%s: want one PodDisruptionBudget selecting its pods %v, found %d", w.name, w.labels, len(pdbs))
			continue
		}
		if w.replicas == nil {
			t.Errorf("%s: replicas not set", w.name)
			continue
		}
		// One pod at a time: the scheduler keeps a leader and a worker, etcd
		// keeps its quorum, and a drain is never blocked outright.
		allowed := 0
		switch spec := pdbs[0].Spec; {
		case spec.MaxUnavailable != nil && spec.MaxUnavailable.Name == "":
			allowed = spec.MaxUnavailable.Number
		case spec.MinAvailable != nil && spec.MinAvailable.Name == "":
			allowed = *w.replicas - spec.MinAvailable.Number
		default:
			t.Errorf("PodDisruptionBudget %q: want an absolute minAvailable or maxUnavailable", pdbs[0].Metadata.Name)
			continue
		}
		if allowed != 1 {
			t.Errorf("PodDisruptionBudget %q allows %d of %d %s pods down at once, want 1",
				pdbs[0].Metadata.Name, allowed, *w.replicas, w.name)
		}
	}
}

// TestPodsAreHardened covers the scheduler and the example etcd alike.
func TestPodsAreHardened(t *testing.T) {
	docs := loadManifests(t)
	var sched deployment
	find(t, docs, "Deployment", schedulerDeployment, &sched)
	var etcd statefulSet
	find(t, docs, "StatefulSet", etcdStatefulSet, &etcd)
	for _, w := range []struct {
		name string
		tmpl podTemplate
	}{
		{"Deployment " + schedulerDeployment, sched.Spec.Template},
		{"StatefulSet " + etcdStatefulSet, etcd.Spec.Template},
	} {
		spec := w.tmpl.Spec
		pod := spec.SecurityContext
		if pod == nil {
			pod = &securityContext{}
		}
		spread := slices.ContainsFunc(spec.TopologySpreadConstraints, func(c spreadConstraint) bool {
			return c.TopologyKey == "kubernetes.io/hostname" && c.LabelSelector.matches(w.tmpl.Metadata.Labels)
		})
		if !spread && (spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil) {
			t.Errorf("%s: want a kubernetes.io/hostname topologySpreadConstraint selecting its pods, or podAntiAffinity", w.name)
		}
		for _, c := range spec.Containers {
			where := fmt.Sprintf("%s container %q", w.name, c.Name)
			sc := c.SecurityContext
			if sc == nil {
				sc = &securityContext{}
			}
			if !isTrue(sc.RunAsNonRoot, pod.RunAsNonRoot) {
				t.Errorf("%s: want runAsNonRoot: true", where)
			}
			if u := first(sc.RunAsUser, pod.RunAsUser); u != nil && *u == 0 {
				t.Errorf("%s: runAsUser 0", where)
			}
			if !isTrue(sc.ReadOnlyRootFilesystem) {
				t.Errorf("%s: want readOnlyRootFilesystem: true", where)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: want allowPrivilegeEscalation: false", where)
			}
			if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
				t.Errorf("%s: want capabilities.drop: [ALL]", where)
			}
			for _, r := range []string{"cpu", "memory"} {
				if c.Resources.Requests[r] == "" {
					t.Errorf("%s: want a %s request", where, r)
				}
			}
			// Memory only: a CPU limit throttles lease keepalives.
			if c.Resources.Limits["memory"] == "" {
				t.Errorf("%s: want a memory limit", where)
			}
		}
	}
}

func isTrue(bs ...*bool) bool {
	b := first(bs...)
	return b != nil && *b
}

// first returns the first value set: the container's setting wins over the
// pod's.
func first[T any](vs ...*T) *T {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}
