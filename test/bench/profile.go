package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
)

// saveProfiles fetches a 10 s CPU profile and a heap profile of the leader
// (replicas started with SCHEDULER_PPROF=1) into dir/profiles, and over the
// same 10 s a CPU profile of one replica that does not lead (name-
// follower-cpu.pprof): most runs are a follower's, and it decodes the same
// watch events without the leader's work.
func saveProfiles(ctx context.Context, e *env, dir, name string) {
	leader, err := e.leader(ctx)
	if err != nil {
		logf("pprof: %v", err)
		return
	}
	out := filepath.Join(dir, "profiles")
	if err := os.MkdirAll(out, 0o755); err != nil {
		logf("pprof: %v", err)
		return
	}
	// The etcd leader's CPU over the same 10 s (etcdnode serves pprof with
	// ETCDNODE_PPROF=1, which -pprof sets).
	done := make(chan struct{})
	go func() {
		defer close(done)
		m, err := e.c.EtcdLeader(ctx)
		if err != nil {
			logf("pprof: etcd leader: %v", err)
			return
		}
		file := filepath.Join(out, name+"-etcd-cpu.pprof")
		if err := fetch(ctx, m.ClientURL+"/debug/pprof/profile?seconds=10", file); err != nil {
			logf("pprof: %v", err)
			return
		}
		logf("pprof: saved %s", file)
	}()
	defer func() { <-done }()
	follower := make(chan struct{})
	go func() {
		defer close(follower)
		for _, r := range e.c.Replicas {
			if r.ID == leader.ID {
				continue
			}
			file := filepath.Join(out, name+"-follower-cpu.pprof")
			if err := fetch(ctx, r.URL()+"/debug/pprof/profile?seconds=10", file); err != nil {
				logf("pprof: follower %s: %v", r.ID, err)
				return
			}
			logf("pprof: saved %s (replica %s)", file, r.ID)
			return
		}
	}()
	defer func() { <-follower }()
	for _, p := range []struct{ path, file string }{
		{"/debug/pprof/profile?seconds=10", name + "-cpu.pprof"},
		{"/debug/pprof/heap", name + "-heap.pprof"},
		{"/debug/pprof/heap?debug=1", name + "-heap.txt"}, // ends with runtime.MemStats
	} {
		if err := fetch(ctx, leader.URL()+p.path, filepath.Join(out, p.file)); err != nil {
			logf("pprof: %v", err)
			continue
		}
		logf("pprof: saved %s", filepath.Join(out, p.file))
	}
}

func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := longClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
