package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/netproxy"
)

// Replica is one scheduler process and the proxies it reaches etcd through:
// one per member, so the replica's client can fail over between members
// while a pause of all of them cuts the replica off entirely.
type Replica struct {
	ID      string
	APIAddr string // 127.0.0.1:port
	API     *client.Client
	Proxies []*netproxy.Proxy

	proc *process
}

func newReplica(dir, bin, id, configPath string, members []*Member) (*Replica, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &Replica{ID: id, APIAddr: fmt.Sprintf("127.0.0.1:%d", port)}
	if r.API, err = client.New(r.URL(), client.WithTimeout(apiTimeout)); err != nil {
		return nil, err
	}
	var eps []string
	for _, m := range members {
		p, err := netproxy.New(m.HostPort())
		if err != nil {
			r.closeProxies()
			return nil, err
		}
		r.Proxies = append(r.Proxies, p)
		eps = append(eps, p.Endpoint())
	}
	r.proc = &process{
		name: id, bin: bin, logPath: filepath.Join(dir, "logs", id+".log"),
		args: []string{"run", "--config", configPath, "--id", id, "--listen", r.APIAddr,
			"--etcd-endpoints", strings.Join(eps, ","), "--log-format", "json"},
	}
	return r, nil
}

func (r *Replica) closeProxies() {
	for _, p := range r.Proxies {
		p.Close()
	}
}

// URL is the base URL of the replica's API.
func (r *Replica) URL() string { return "http://" + r.APIAddr }

// Start starts the process (again).
func (r *Replica) Start() error { return r.proc.start() }

// SetBinary makes the next Start run another scheduler binary (a rolling
// upgrade or downgrade); the replica must not be running.
func (r *Replica) SetBinary(bin string) error {
	if r.Running() {
		return fmt.Errorf("cluster: replica %s runs; stop it before changing its binary", r.ID)
	}
	r.proc.mu.Lock()
	defer r.proc.mu.Unlock()
	r.proc.bin = bin
	return nil
}

// Kill sends SIGKILL and waits for the exit: a crash.
func (r *Replica) Kill() error { return r.proc.kill() }

// Stop freezes the process with SIGSTOP: a long GC pause or a stalled VM.
func (r *Replica) Stop() error { return r.proc.signal(syscall.SIGSTOP) }

// Cont thaws a stopped process with SIGCONT.
func (r *Replica) Cont() error { return r.proc.signal(syscall.SIGCONT) }

// Term sends SIGTERM and waits for the graceful exit (up to timeout).
func (r *Replica) Term(timeout time.Duration) error { return r.proc.term(timeout) }

// Restart kills the process if it still runs and starts it again.
func (r *Replica) Restart() error {
	if err := r.proc.kill(); err != nil {
		return err
	}
	return r.proc.start()
}

// Running reports whether the process is alive (frozen counts).
func (r *Replica) Running() bool { return r.proc.running() }

// Frozen reports whether the process is SIGSTOPped.
func (r *Replica) Frozen() bool { return r.proc.isFrozen() }

// PauseProxy cuts the replica off from etcd: its proxies stop forwarding
// but keep the connections open.
func (r *Replica) PauseProxy() {
	for _, p := range r.Proxies {
		p.Pause()
	}
}

// ResumeProxy heals the partition.
func (r *Replica) ResumeProxy() {
	for _, p := range r.Proxies {
		p.Resume()
	}
}

// DelayProxy adds latency each way on the replica's etcd traffic; zero
// removes it.
func (r *Replica) DelayProxy(to, back time.Duration) {
	for _, p := range r.Proxies {
		p.SetDelay(to, back)
	}
}

// apiTimeout bounds one request to a replica's API: a frozen replica must
// not hold up a caller that asks the next one.
const apiTimeout = 3 * time.Second

// Ready reports whether /readyz answers 200.
func (r *Replica) Ready(ctx context.Context) bool { return r.API.Ready(ctx) == nil }

// WaitReady waits until /readyz answers 200.
func (r *Replica) WaitReady(ctx context.Context) error {
	for !r.Ready(ctx) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: replica %s not ready: %w", r.ID, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
