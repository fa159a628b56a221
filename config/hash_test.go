package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// perReplica are the settings each replica may set for itself (docs/design-edges.md#what-the-config-hash-covers):
// changing one must not change the config hash, or replicas started from
// one file with their own --listen show a false drift.
var perReplica = []string{
	"api.listen",
	"api.token_file",
	"cluster.data_dir",
	"cluster.etcd.endpoints",
	"cluster.etcd.dial_timeout",
	"cluster.etcd.username",
	"cluster.etcd.password_file",
	"cluster.etcd.tls.ca_file",
	"cluster.etcd.tls.cert_file",
	"cluster.etcd.tls.key_file",
	"worker.max_parallel",
	"worker.shutdown_grace",
}

const hashBase = `
cluster:
  etcd: {endpoints: ["http://127.0.0.1:2379"], prefix: /sched/}
api: {listen: "127.0.0.1:8080"}
resources:
  - {name: db, limit: 2}
notify:
  sinks: [{name: ops, url: "http://127.0.0.1:9/hook"}]
jobs:
  - name: a
    schedule: "@every 10s"
    exec: {command: [date]}
`

// TestHashCoversOnlyShared changes every scalar setting outside jobs, one
// at a time: the per-replica ones must keep the hash, all others (a field
// added later included) must change it.
func TestHashCoversOnlyShared(t *testing.T) {
	want := mustParse(t, hashBase).Hash()
	seen := map[string]bool{}
	var paths []string
	collectLeaves(reflect.TypeOf(Config{}), "", nil, func(path string, index []int) {
		paths = append(paths, path)
		cfg := mustParse(t, hashBase)
		if !perturb(reflect.ValueOf(cfg).Elem().FieldByIndex(index)) {
			t.Errorf("%s: no way to change a %s; teach perturb", path, reflect.ValueOf(cfg).Elem().FieldByIndex(index).Type())
			return
		}
		got := cfg.Hash()
		switch {
		case slices.Contains(perReplica, path):
			seen[path] = true
			if got != want {
				t.Errorf("changing per-replica %s changed the hash (%s -> %s): replicas with their own %s would show a false drift", path, want, got, path)
			}
		case got == want:
			t.Errorf("changing shared %s kept the hash %s: replicas that disagree on it would show no drift", path, want)
		}
	})
	for _, p := range perReplica {
		if !seen[p] {
			t.Errorf("per-replica %s is not a field of Config (walked %s)", p, strings.Join(paths, ", "))
		}
	}
	for _, change := range []string{
		strings.Replace(hashBase, "limit: 2", "limit: 3", 1),
		strings.Replace(hashBase, "name: ops", "name: pager", 1),
		strings.Replace(hashBase, "@every 10s", "@every 11s", 1),
	} {
		if mustParse(t, change).Hash() == want {
			t.Errorf("shared resources, notify or jobs changed, same hash:\n%s", change)
		}
	}
}

// collectLeaves calls leaf with the yaml path and field index of every
// setting of t that is not a list of records (jobs, resources, sinks, which
// are shared and tested above).
func collectLeaves(t reflect.Type, prefix string, index []int, leaf func(string, []int)) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		path, idx := prefix+name, append(slices.Clone(index), i)
		switch {
		case f.Type.Kind() == reflect.Struct:
			collectLeaves(f.Type, path+".", idx, leaf)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
		default:
			leaf(path, idx)
		}
	}
}

// perturb changes v to another valid-looking value of its type.
func perturb(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeOf(Duration(0)) {
			v.SetInt(v.Int() + int64(time.Second))
		} else {
			v.SetInt(v.Int() + 1)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return false
		}
		v.Set(reflect.Append(v, reflect.ValueOf("x").Convert(v.Type().Elem())))
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
			return true
		}
		return perturb(v.Elem())
	default:
		return false
	}
	return true
}
