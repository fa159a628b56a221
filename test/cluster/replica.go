package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/etcdsched/scheduler/internal/netproxy"
)

// Replica is one scheduler process and the proxies it reaches etcd through:
// one per member, so the replica's client can fail over between members
// while a pause of all of them cuts the replica off entirely.
type Replica struct {
	ID      string
	APIAddr string // 127.0.0.1:port
	Proxies []*netproxy.Proxy

	proc *process
}

func newReplica(dir, bin, id, configPath string, members []*Member) (*Replica, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &Replica{ID: id, APIAddr: fmt.Sprintf("127.0.0.1:%d", port)}
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

var httpClient = &http.Client{Timeout: 3 * time.Second}

// Get fetches path from the replica's API and decodes the JSON answer
// into out (when not nil); it returns the status code.
func (r *Replica) Get(ctx context.Context, path string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL()+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("cluster: %s%s: %w", r.ID, path, err)
		}
	}
	return resp.StatusCode, nil
}

// Ready reports whether /readyz answers 200.
func (r *Replica) Ready(ctx context.Context) bool {
	code, err := r.Get(ctx, "/readyz", nil)
	return err == nil && code == http.StatusOK
}

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

// LeaderInfo is the answer of GET /api/v1/leader.
type LeaderInfo struct {
	ID       string `json:"id"`
	APIAddr  string `json:"api_addr"`
	Revision int64  `json:"revision"`
}

// SlotInfo is one entry of GET /api/v1/slots.
type SlotInfo struct {
	Job          string    `json:"job"`
	Resource     string    `json:"resource"`
	Slot         int       `json:"slot"`
	RunID        string    `json:"run_id"`
	Holder       string    `json:"holder"`
	FencingToken int64     `json:"fencing_token"`
	StartedAt    time.Time `json:"started_at"`
}
