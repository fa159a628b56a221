package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/etcdsched/scheduler/test/cluster"
)

// saveProfiles fetches a CPU profile (-pprof-seconds long) and a heap profile of the leader
// (replicas started with SCHEDULER_PPROF=1) into dir/profiles, and over the
// same time a CPU profile of each replica that does not lead (name-
// follower-cpu.pprof, then name-follower2-cpu.pprof on): most runs are a
// follower's, and it decodes the same watch events without the leader's
// work.
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
	// etcd's CPU over the same time.
	done := make(chan struct{})
	go func() { defer close(done); saveEtcdProfiles(ctx, e, out, name) }()
	defer func() { <-done }()
	// Every replica that does not lead, at once: the first as
	// name-follower-cpu.pprof, the others numbered from 2 (merge them with
	// go tool pprof to see what the replicas do together).
	var followers sync.WaitGroup
	k := 0
	for _, r := range e.c.Replicas {
		if r.ID == leader.ID {
			continue
		}
		k++
		file := filepath.Join(out, name+"-follower-cpu.pprof")
		if k > 1 {
			file = filepath.Join(out, fmt.Sprintf("%s-follower%d-cpu.pprof", name, k))
		}
		followers.Go(func() {
			if err := fetch(ctx, r.URL()+e.cpuProfile(), file); err != nil {
				logf("pprof: follower %s: %v", r.ID, err)
				return
			}
			logf("pprof: saved %s (replica %s)", file, r.ID)
		})
	}
	defer followers.Wait()
	for _, p := range []struct{ path, file string }{
		{e.cpuProfile(), name + "-cpu.pprof"},
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

// saveEtcdProfiles fetches CPU profiles (-pprof-seconds) of the etcd leader
// (name-etcd-cpu.pprof) and of one follower (name-etcd-follower-cpu.pprof)
// into out, at once (etcdnode serves pprof with ETCDNODE_PPROF=1, which
// -pprof sets). Every member applies every write; the leader also
// replicates and answers the clients it has.
func saveEtcdProfiles(ctx context.Context, e *env, out, name string) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		logf("pprof: %v", err)
		return
	}
	leader, err := e.c.EtcdLeader(ctx)
	if err != nil {
		logf("pprof: etcd leader: %v", err)
		return
	}
	files := map[*cluster.Member]string{leader: name + "-etcd-cpu.pprof"}
	for _, m := range e.c.Members {
		if m != leader && m.Running() {
			files[m] = name + "-etcd-follower-cpu.pprof"
			break
		}
	}
	var wg sync.WaitGroup
	for m, file := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := filepath.Join(out, file)
			if err := fetch(ctx, m.ClientURL+e.cpuProfile(), path); err != nil {
				logf("pprof: etcd %s: %v", m.Name, err)
				return
			}
			logf("pprof: saved %s (etcd %s)", path, m.Name)
		}()
	}
	wg.Wait()
}

// A CPU profile lasts defaultProfileSeconds unless -pprof-seconds says
// otherwise; maxProfileSeconds keeps its fetch inside longClient's timeout.
const (
	defaultProfileSeconds = 10
	maxProfileSeconds     = 100
)

// cpuProfile is the path of a CPU profile of e.profileSeconds
// (defaultProfileSeconds when unset).
func (e *env) cpuProfile() string {
	s := e.profileSeconds
	if s == 0 {
		s = defaultProfileSeconds
	}
	return fmt.Sprintf("/debug/pprof/profile?seconds=%d", s)
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
