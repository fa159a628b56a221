package deploy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestEtcdEndpointsNameTheMembers: the config lists exactly the members of
// the example StatefulSet, by the DNS names its headless Service gives them.
func TestEtcdEndpointsNameTheMembers(t *testing.T) {
	s := loadScheduler(t)
	var sts statefulSet
	d := find(t, s.docs, "StatefulSet", etcdStatefulSet, &sts)
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas < 3 || *sts.Spec.Replicas%2 == 0 {
		t.Fatalf("%s: want an odd number of members, at least 3", d)
	}
	replicas := *sts.Spec.Replicas
	// Members must bootstrap together; see etcd.yaml.
	if sts.Spec.PodManagementPolicy != "Parallel" {
		t.Errorf("%s: podManagementPolicy %q, want Parallel", d, sts.Spec.PodManagementPolicy)
	}
	if len(sts.Spec.VolumeClaimTemplates) == 0 {
		t.Errorf("%s: no volumeClaimTemplates: members would lose their data on restart", d)
	}

	var svc service
	sd := find(t, s.docs, "Service", sts.Spec.ServiceName, &svc)
	if svc.Spec.ClusterIP != "None" {
		t.Errorf("%s: want clusterIP: None, the headless Service of %s", sd, d)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("%s: want publishNotReadyAddresses: true, or members cannot find each other to form a quorum", sd)
	}
	if !subset(svc.Spec.Selector, sts.Spec.Template.Metadata.Labels) {
		t.Errorf("%s: selector %v does not select the members", sd, svc.Spec.Selector)
	}
	clientPort := 0
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
		want = append(want, fmt.Sprintf("%s-%d.%s:%d", sts.Metadata.Name, i, svc.Metadata.Name, clientPort))
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
		wantMembers = append(wantMembers, fmt.Sprintf("%s-%d", sts.Metadata.Name, i))
	}
	if !slices.Equal(members, wantMembers) {
		t.Errorf("%s: --initial-cluster names %q, want %q", d, members, wantMembers)
	}
}
