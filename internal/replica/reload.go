package replica

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdsched/scheduler/config"
)

type reloadMetrics struct {
	total *prometheus.CounterVec
}

func newReloadMetrics(reg prometheus.Registerer) *reloadMetrics {
	m := &reloadMetrics{total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_config_reloads_total",
		Help: "Configuration reloads by result (success or error).",
	}, []string{"result"})}
	m.total.WithLabelValues("success")
	m.total.WithLabelValues("error")
	reg.MustRegister(m.total)
	return m
}

// serveReloads reloads the config on every SIGHUP until ctx ends.
func (r *replica) serveReloads(ctx context.Context, signals <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-signals:
			if err := r.reload(); err != nil {
				r.log.Error("config reload refused; the previous config keeps running", "file", r.opts.ConfigPath, "err", err)
			}
		}
	}
}

// reload reads the file again. A valid file replaces the jobs (removed jobs
// stop being scheduled; their running runs finish); an invalid one changes
// nothing and its error shows on /api/v1/status and in the metric.
func (r *replica) reload() error {
	cfg, err := config.Load(r.opts.ConfigPath)
	if err == nil && r.opts.Overrides != nil {
		r.opts.Overrides(cfg)
	}
	if err == nil {
		err = r.api.LoadToken(cfg.API.TokenFile)
	}
	r.mu.Lock()
	r.reloadAt = time.Now()
	if err != nil {
		r.reloadErr = err
		r.mu.Unlock()
		r.reloads.total.WithLabelValues("error").Inc()
		return err
	}
	old := r.cfg
	r.cfg, r.reloadErr = cfg, nil
	r.mu.Unlock()
	r.reloads.total.WithLabelValues("success").Inc()
	if fixed := restartOnly(old, cfg); len(fixed) > 0 {
		r.log.Warn("some changed settings take effect only at restart", "settings", fixed)
	}
	r.membership.SetConfigHash(cfg.Hash())
	r.engine.ConfigChanged()
	r.log.Info("config reloaded", "file", r.opts.ConfigPath, "config_hash", cfg.Hash(), "jobs", len(cfg.Jobs))
	return nil
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
