package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Member is one etcd member process.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:port
	PeerURL   string
	DataDir   string

	proc    *process
	initial string // the --initial-cluster value
	started bool   // once started, restarts join as an existing member
	fsync   bool   // without, the member runs --unsafe-no-fsync
}

func newMember(dir, bin, name string) (*Member, error) {
	cp, err := freePort()
	if err != nil {
		return nil, err
	}
	pp, err := freePort()
	if err != nil {
		return nil, err
	}
	m := &Member{
		Name:      name,
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", cp),
		PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", pp),
		DataDir:   filepath.Join(dir, "data", name),
	}
	m.proc = &process{name: name, bin: bin, logPath: filepath.Join(dir, "logs", name+".log")}
	return m, nil
}

// HostPort is the client address without scheme.
func (m *Member) HostPort() string { return strings.TrimPrefix(m.ClientURL, "http://") }

// Start runs the member; after its first start it rejoins with its data
// dir as an existing member.
func (m *Member) Start() error {
	state := "new"
	if m.started {
		state = "existing"
	}
	m.proc.args = []string{"--name", m.Name, "--data-dir", m.DataDir, "--client-url", m.ClientURL,
		"--peer-url", m.PeerURL, "--initial-cluster", m.initial, "--initial-cluster-state", state}
	if !m.fsync {
		m.proc.args = append(m.proc.args, "--unsafe-no-fsync")
	}
	if err := m.proc.start(); err != nil {
		return err
	}
	m.started = true
	return nil
}

// Kill sends SIGKILL and waits for the exit.
func (m *Member) Kill() error { return m.proc.kill() }

// Term stops the member gracefully.
func (m *Member) Term() error { return m.proc.term(30 * time.Second) }

// Restart starts a stopped member again with the same data dir.
func (m *Member) Restart() error { return m.Start() }

// Running reports whether the member process is alive.
func (m *Member) Running() bool { return m.proc.running() }

// WaitHealthy waits until the member answers a status request and knows a
// raft leader.
func (m *Member) WaitHealthy(ctx context.Context) error {
	for {
		st, err := memberStatus(ctx, m.ClientURL)
		if err == nil && st.Leader != 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: member %s not healthy: %w (last: %v)", m.Name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func memberStatus(ctx context.Context, url string) (*clientv3.StatusResponse, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return cli.Status(sctx, url)
}

// EtcdLeader finds the member that is raft leader, asking the live members.
func (c *Cluster) EtcdLeader(ctx context.Context) (*Member, error) {
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		st, err := memberStatus(ctx, m.ClientURL)
		if err != nil || st.Leader == 0 {
			continue
		}
		for _, o := range c.Members {
			ost, err := memberStatus(ctx, o.ClientURL)
			if err == nil && ost.Header.MemberId == st.Leader {
				return o, nil
			}
		}
	}
	return nil, fmt.Errorf("cluster: no etcd leader found")
}

// WaitEtcdHealthy waits until every running member is healthy.
func (c *Cluster) WaitEtcdHealthy(ctx context.Context) error {
	for _, m := range c.Members {
		if m.Running() {
			if err := m.WaitHealthy(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// KillEtcd SIGKILLs every member: the whole store is down.
func (c *Cluster) KillEtcd() error {
	for _, m := range c.Members {
		if err := m.Kill(); err != nil {
			return err
		}
	}
	return nil
}

// StartEtcd restarts every stopped member and waits until they are healthy.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	for _, m := range c.Members {
		if !m.Running() {
			if err := m.Restart(); err != nil {
				return err
			}
		}
	}
	return c.WaitEtcdHealthy(ctx)
}

// Endpoints are the members' client URLs, for clients that talk to etcd
// directly (the witness, the test's own checks).
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Client is a new client straight to the members; the caller closes it.
func (c *Cluster) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second})
}
