package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
)

// Options describe a cluster.
type Options struct {
	// Dir holds data dirs, logs and the config file; required.
	Dir      string
	Binaries Binaries
	// Members is the etcd cluster size (default 3); Replicas the number of
	// scheduler processes (default 3).
	Members, Replicas int
	// Config is the scheduler YAML. Endpoints and the listen address come
	// from flags, so it need not name them.
	Config string
	// StartTimeout bounds Start (default 2 minutes).
	StartTimeout time.Duration
	// Fsync makes the members fsync their log as production members do
	// (default off: tests and most bench scenarios measure the scheduler,
	// not the disk).
	Fsync bool
}

// ConfigPath is the replicas' config file in a cluster's Dir: rewritten
// and followed by SIGHUP (or the replicas' own watch of it), a reload.
func ConfigPath(dir string) string { return filepath.Join(dir, "scheduler.yaml") }

// Cluster is a running set of etcd members and scheduler replicas.
type Cluster struct {
	Members  []*Member
	Replicas []*Replica
	Dir      string

	closeOnce sync.Once
}

// Start launches the etcd members, waits until they form a cluster, then
// the replicas, and waits until every replica is ready. On error whatever
// started is stopped.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	configPath, err := prepareDir(opts.Dir, opts.Config)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: opts.Dir}
	if err := c.startMembers(ctx, opts); err != nil {
		return nil, err
	}
	if err := c.startReplicas(ctx, opts, configPath); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// withDefaults checks the required options and fills in the defaults.
func (opts Options) withDefaults() (Options, error) {
	if opts.Dir == "" || opts.Binaries.Scheduler == "" || opts.Binaries.EtcdNode == "" {
		return opts, errors.New("cluster: Dir and Binaries are required")
	}
	if opts.Members == 0 {
		opts.Members = 3
	}
	if opts.Replicas == 0 {
		opts.Replicas = 3
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	return opts, nil
}

// prepareDir makes dir's logs and data directories and writes the
// scheduler's config file, whose path it gives.
func prepareDir(dir, config string) (string, error) {
	for _, sub := range []string{"logs", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", err
		}
	}
	configPath := ConfigPath(dir)
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return "", err
	}
	return configPath, nil
}

// startMembers starts the etcd members and waits until they form a
// healthy cluster; on error the members started are stopped.
func (c *Cluster) startMembers(ctx context.Context, opts Options) error {
	var initial []string
	for i := range opts.Members {
		m, err := newMember(opts.Dir, opts.Binaries.EtcdNode, fmt.Sprintf("etcd%d", i+1))
		if err != nil {
			return err
		}
		m.fsync = opts.Fsync
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		m.initial = strings.Join(initial, ",")
		if err := m.Start(); err != nil {
			c.Close()
			return err
		}
	}
	if err := c.WaitEtcdHealthy(ctx); err != nil {
		c.Close()
		return err
	}
	return nil
}

// startReplicas starts the scheduler replicas, one after another, and
// waits until every one is ready.
func (c *Cluster) startReplicas(ctx context.Context, opts Options, configPath string) error {
	for i := range opts.Replicas {
		r, err := newReplica(opts.Dir, opts.Binaries.Scheduler, fmt.Sprintf("r%d", i+1), configPath, c.Members)
		if err != nil {
			return err
		}
		c.Replicas = append(c.Replicas, r)
		if err := r.Start(); err != nil {
			return err
		}
	}
	for _, r := range c.Replicas {
		if err := r.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// StartT starts a cluster for a test: binaries must be built already. The
// cluster is killed at cleanup, and on failure the tail of every log is
// printed.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts)
	if err != nil {
		if opts.Dir != "" {
			t.Log(TailLogs(opts.Dir, 40))
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Log(c.TailLogs(60))
		}
	})
	return c
}

// Close kills every process and closes the proxies.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, r := range c.Replicas {
			wg.Add(1)
			go func() { defer wg.Done(); _ = r.Kill(); r.closeProxies() }()
		}
		wg.Wait()
		for _, m := range c.Members {
			wg.Add(1)
			go func() { defer wg.Done(); _ = m.Kill() }()
		}
		wg.Wait()
	})
}

// Replica returns the replica with id, or nil.
func (c *Cluster) Replica(id string) *Replica {
	for _, r := range c.Replicas {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Leader asks the running, unfrozen replicas who leads (GET /api/v1/leader)
// and returns that replica once one answers.
func (c *Cluster) Leader(ctx context.Context) (*Replica, error) {
	var lastErr error = errors.New("no replica answered")
	for _, r := range c.Replicas {
		if !r.Running() || r.Frozen() {
			continue
		}
		l, err := r.API.Leader(ctx)
		if err != nil {
			lastErr = fmt.Errorf("%s: /api/v1/leader: %w", r.ID, err)
			continue
		}
		if lr := c.Replica(l.ID); lr != nil {
			return lr, nil
		}
		lastErr = fmt.Errorf("%s names unknown leader %q", r.ID, l.ID)
	}
	return nil, fmt.Errorf("cluster: leader: %w", lastErr)
}

// WaitLeader polls Leader until it answers or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (*Replica, error) {
	for {
		l, err := c.Leader(ctx)
		if err == nil {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Slots asks a running replica which slots are held (GET /api/v1/slots).
func (c *Cluster) Slots(ctx context.Context) ([]client.Slot, error) {
	var lastErr error = errors.New("no replica answered")
	for _, r := range c.Replicas {
		if !r.Running() || r.Frozen() {
			continue
		}
		out, err := r.API.Slots(ctx)
		if err == nil {
			return out, nil
		}
		lastErr = fmt.Errorf("%s: /api/v1/slots: %w", r.ID, err)
	}
	return nil, lastErr
}

// TailLogs returns the last n lines of every process log.
func (c *Cluster) TailLogs(n int) string { return TailLogs(c.Dir, n) }

// TailLogs returns the last n lines of every log under dir/logs.
func TailLogs(dir string, n int) string {
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "\n----- %s (last %d lines) -----\n%s\n", f, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}
