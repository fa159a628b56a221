package deploy

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// workload is a set of pods that a PodDisruptionBudget and the hardening
// rules apply to.
type workload struct {
	name     string
	replicas *int32
	template corev1.PodTemplateSpec
}

// workloads are the scheduler and, when rendered, the bundled etcd.
func (s scheduler) workloads(t *testing.T) []workload {
	t.Helper()
	ws := []workload{{"Deployment " + s.deploy.Name, s.deploy.Spec.Replicas, s.deploy.Spec.Template}}
	for _, sts := range all[appsv1.StatefulSet](t, s.objs, "StatefulSet") {
		ws = append(ws, workload{"StatefulSet " + sts.Name, sts.Spec.Replicas, sts.Spec.Template})
	}
	return ws
}

// disruptionsAllowed is how many of replicas pods the budget lets a drain
// take at once; ok is false for a percentage, which this test cannot judge.
func disruptionsAllowed(spec policyv1.PodDisruptionBudgetSpec, replicas int32) (allowed int, ok bool) {
	switch {
	case spec.MaxUnavailable != nil && spec.MaxUnavailable.Type == intstr.Int:
		return spec.MaxUnavailable.IntValue(), true
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		return int(replicas) - spec.MinAvailable.IntValue(), true
	}
	return 0, false
}

// checkDisruptionBudgets: one budget per workload, letting one pod at a
// time go: the scheduler keeps a leader and a worker, etcd keeps its quorum,
// and a drain is never blocked outright.
func (s scheduler) checkDisruptionBudgets(t *testing.T) {
	t.Helper()
	pdbs := all[policyv1.PodDisruptionBudget](t, s.objs, "PodDisruptionBudget")
	for _, w := range s.workloads(t) {
		var mine []*policyv1.PodDisruptionBudget
		for _, pdb := range pdbs {
			if selects(t, pdb.Spec.Selector, w.template.Labels) {
				mine = append(mine, pdb)
			}
		}
		if len(mine) != 1 {
			t.Errorf("%s: want one PodDisruptionBudget selecting its pods %v, found %d", w.name, w.template.Labels, len(mine))
			continue
		}
		if w.replicas == nil {
			t.Errorf("%s: replicas not set", w.name)
			continue
		}
		allowed, ok := disruptionsAllowed(mine[0].Spec, *w.replicas)
		if !ok {
			t.Errorf("PodDisruptionBudget %q: want an absolute minAvailable or maxUnavailable", mine[0].Name)
			continue
		}
		if allowed != 1 {
			t.Errorf("PodDisruptionBudget %q allows %d of %d %s pods down at once, want 1",
				mine[0].Name, allowed, *w.replicas, w.name)
		}
	}
}

// checkHardened: non-root, read-only, no privilege escalation, no
// capabilities, resource requests and a memory limit (no CPU limit: it
// throttles lease keepalives), and pods spread over nodes.
func (s scheduler) checkHardened(t *testing.T) {
	t.Helper()
	for _, w := range s.workloads(t) {
		spec := w.template.Spec
		pod := spec.SecurityContext
		if pod == nil {
			pod = &corev1.PodSecurityContext{}
		}
		spread := slices.ContainsFunc(spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
			return c.TopologyKey == corev1.LabelHostname && selects(t, c.LabelSelector, w.template.Labels)
		})
		if !spread && (spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil) {
			t.Errorf("%s: want a kubernetes.io/hostname topologySpreadConstraint selecting its pods, or podAntiAffinity", w.name)
		}
		for _, c := range spec.Containers {
			where := fmt.Sprintf("%s container %q", w.name, c.Name)
			sc := c.SecurityContext
			if sc == nil {
				sc = &corev1.SecurityContext{}
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
			if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("%s: want capabilities.drop: [ALL]", where)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
					t.Errorf("%s: want a %s request", where, r)
				}
			}
			// Memory only: a CPU limit throttles lease keepalives.
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.IsZero() {
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
