package deploy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// checkEtcdMembers: the config lists exactly the members of the etcd
// StatefulSet, by the DNS names its headless Service gives them, and the
// members' --initial-cluster names every one of them.
func (s scheduler) checkEtcdMembers(t *testing.T) {
	t.Helper()
	sts := get[appsv1.StatefulSet](t, s.objs, "StatefulSet", s.names.etcd)
	where := "StatefulSet " + sts.Name
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas < 3 || *sts.Spec.Replicas%2 == 0 {
		t.Fatalf("%s: want an odd number of members, at least 3", where)
	}
	replicas := int(*sts.Spec.Replicas)
	// Members must bootstrap together; see etcd.yaml.
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("%s: podManagementPolicy %q, want Parallel", where, sts.Spec.PodManagementPolicy)
	}
	if len(sts.Spec.VolumeClaimTemplates) == 0 {
		t.Errorf("%s: no volumeClaimTemplates: members would lose their data on restart", where)
	}

	svc := get[corev1.Service](t, s.objs, "Service", sts.Spec.ServiceName)
	sd := "Service " + svc.Name
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("%s: want clusterIP: None, the headless Service of %s", sd, where)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("%s: want publishNotReadyAddresses: true, or members cannot find each other to form a quorum", sd)
	}
	if !subset(svc.Spec.Selector, sts.Spec.Template.Labels) {
		t.Errorf("%s: selector %v does not select the members", sd, svc.Spec.Selector)
	}
	if !selects(t, sts.Spec.Selector, sts.Spec.Template.Labels) {
		t.Errorf("%s: selector does not match its pod labels %v", where, sts.Spec.Template.Labels)
	}
	var clientPort int32
	for _, p := range svc.Spec.Ports {
		if p.Name == "client" {
			clientPort = p.Port
		}
	}
	if clientPort == 0 {
		t.Fatalf("%s: no port named client", sd)
	}

	var want []string
	for i := range replicas {
		want = append(want, fmt.Sprintf("%s-%d.%s%s:%d", sts.Name, i, svc.Name, s.names.etcdDomain, clientPort))
	}
	var got []string
	for _, ep := range s.config.Cluster.Etcd.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme != "http" {
			t.Errorf("endpoint %q: want http://host:port (the example etcd has no TLS)", ep)
			continue
		}
		got = append(got, u.Host)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("cluster.etcd.endpoints hosts %q, want the %d members %q", got, replicas, want)
	}

	// --initial-cluster must name every member too, or the cluster never forms.
	var initial string
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--initial-cluster="); ok {
				initial = v
			}
		}
	}
	var members []string
	for _, m := range strings.Split(initial, ",") {
		name, _, _ := strings.Cut(m, "=")
		members = append(members, name)
	}
	var wantMembers []string
	for i := range replicas {
		wantMembers = append(wantMembers, fmt.Sprintf("%s-%d", sts.Name, i))
	}
	if !slices.Equal(members, wantMembers) {
		t.Errorf("%s: --initial-cluster names %q, want %q", where, members, wantMembers)
	}
}
