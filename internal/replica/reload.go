package replica

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdsched/scheduler/config"
)

type reloadMetrics struct {
	total *prometheus.CounterVec
}

func newReloadMetrics(reg prometheus.Registerer) (*reloadMetrics, error) {
	m := &reloadMetrics{total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_config_reloads_total",
		Help: "Configuration reloads by result (success or error).",
	}, []string{"result"})}
	// Both series exist from the start, so an alert on increase() of the
	// error series sees the first error.
	m.total.WithLabelValues("success")
	m.total.WithLabelValues("error")
	if err := reg.Register(m.total); err != nil {
		return nil, fmt.Errorf("replica: metrics: %w", err)
	}
	return m, nil
}

// serveReloads reloads the config on every SIGHUP until ctx ends.
func (r *replica) serveReloads(ctx context.Context, signals <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-signals:
			r.log.Info("SIGHUP: reloading the config", "file", r.opts.ConfigPath)
			r.reload(false)
		}
	}
}

// fileSum is the SHA-256 of the config file's bytes.
type fileSum [sha256.Size]byte

// reload reads the file again. A valid file replaces the jobs (removed jobs
// stop being scheduled; their running runs finish); an invalid one changes
// nothing and its error shows on /api/v1/status, in the log and in the
// metric. With onlyIfChanged (the file watcher), content already seen, valid
// or not, is left alone: a directory event for another file, or a ConfigMap
// swap that kept this file, is no reload.
func (r *replica) reload(onlyIfChanged bool) {
	data, err := os.ReadFile(r.opts.ConfigPath)
	if err != nil && onlyIfChanged && os.IsNotExist(err) {
		// In the middle of an editor's rename or a swap: the next event
		// brings the file back.
		return
	}
	sum := fileSum(sha256.Sum256(data))
	r.mu.Lock()
	if onlyIfChanged && err == nil && sum == r.fileSum {
		r.mu.Unlock()
		return
	}
	if err == nil {
		r.fileSum = sum
	}
	r.mu.Unlock()

	var cfg *config.Config
	if err != nil {
		err = fmt.Errorf("config: %w", err)
	} else {
		cfg, err = config.Parse(r.opts.ConfigPath, data)
	}
	if err == nil && r.opts.Overrides != nil {
		r.opts.Overrides(cfg)
	}
	if err == nil {
		err = r.api.Configure(cfg.API)
	}
	r.mu.Lock()
	r.reloadAt = time.Now()
	if err != nil {
		r.reloadErr = err
		r.mu.Unlock()
		r.reloads.total.WithLabelValues("error").Inc()
		r.log.Error("config reload refused; the previous config keeps running", "file", r.opts.ConfigPath, "err", err)
		return
	}
	old := r.cfg
	hash := cfg.Hash()
	if hash != r.cfgHash {
		// The same config read again was applied when it first came.
		r.appliedAt = r.reloadAt
	}
	r.cfg, r.cfgHash, r.reloadErr = cfg, hash, nil
	r.mu.Unlock()
	r.reloads.total.WithLabelValues("success").Inc()
	if fixed := restartOnly(old, cfg); len(fixed) > 0 {
		r.log.Warn("some changed settings take effect only at restart", "settings", fixed)
	}
	r.node.Membership.SetConfigHash(hash)
	r.node.Engine.ConfigChanged()
	// The parse's garbage is several times the file (see cmd/scheduler):
	// give it back to the OS now rather than over minutes.
	debug.FreeOSMemory()
	r.log.Info("config reloaded", "file", r.opts.ConfigPath, "config_hash", hash, "jobs", len(cfg.Jobs))
}

// restartOnly names the changed settings a running replica cannot adopt.
func restartOnly(old, cur *config.Config) []string {
	var out []string
	check := func(name string, same bool) {
		if !same {
			out = append(out, name)
		}
	}
	check("cluster.etcd", fmt.Sprint(old.Cluster.Etcd) == fmt.Sprint(cur.Cluster.Etcd) && slices.Equal(old.Cluster.Etcd.Endpoints, cur.Cluster.Etcd.Endpoints))
	check("cluster.data_dir", old.Cluster.DataDir == cur.Cluster.DataDir)
	check("cluster.session_ttl", old.Cluster.SessionTTL == cur.Cluster.SessionTTL)
	check("cluster.lease_margin", old.Cluster.LeaseMargin == cur.Cluster.LeaseMargin)
	check("api.listen", old.API.Listen == cur.API.Listen)
	return out
}
