package jobs_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
)

// overdueGauges is what reg says of backup and report: backup's and
// report's scheduler_job_overdue, and report's last success.
func overdueGauges(t *testing.T, reg *prometheus.Registry) string {
	g := func(name, job string) float64 {
		return metric(t, reg, name, map[string]string{"job": job, "team": ""})
	}
	return fmt.Sprintf("backup overdue %v, report overdue %v, report last success %.3f",
		g("scheduler_job_overdue", "backup"), g("scheduler_job_overdue", "report"),
		g("scheduler_job_last_success_timestamp_seconds", "report"))
}

// gaugesAgree waits until every registry says the same, with backup
// overdue, report not, and report's last success known (at least since).
func gaugesAgree(t *testing.T, what string, regs []*prometheus.Registry, since float64) {
	t.Helper()
	poll.Until(t, 60*time.Second, what, func() (bool, string) {
		var said []string
		for _, reg := range regs {
			said = append(said, overdueGauges(t, reg))
		}
		last := metric(t, regs[0], "scheduler_job_last_success_timestamp_seconds", map[string]string{"job": "report", "team": ""})
		for _, s := range said {
			if s != said[0] {
				return false, fmt.Sprint(said)
			}
		}
		return metric(t, regs[0], "scheduler_job_overdue", map[string]string{"job": "backup", "team": ""}) == 1 &&
			last > since, fmt.Sprint(said)
	})
}

// The overdue gauges are computed from etcd, so every replica says the
// same: before and after a leader change, and right after every replica
// was stopped and new ones started.
func TestOverdueGaugesAgreeOnEveryReplica(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	backup := overdueJob(httpJob("backup", "@every 1s", w.url("status=500")), time.Second)
	report := overdueJob(httpJob("report", "@every 1s", w.url("")), time.Minute)
	cfg := newConfig(backup, report)
	cfg.Notify.Sinks = []config.Sink{{Name: "ops", URL: startReceiver(t, http.StatusOK).srv.URL, Format: config.FormatJSON, On: []string{config.Overdue}}}
	start := func(ids ...string) ([]*node, []*prometheus.Registry) {
		var nodes []*node
		var regs []*prometheus.Registry
		for _, id := range ids {
			reg := prometheus.NewRegistry()
			nodes = append(nodes, etcd.nodeWith(id, cfg, timing{Reg: reg}))
			regs = append(regs, reg)
		}
		return nodes, regs
	}
	nodes, regs := start("a", "b")
	gaugesAgree(t, "the gauges on a and b", regs, 0)
	first := leaderOf(t, nodes)
	first.crash()
	survivor := regs[0]
	if first == nodes[0] {
		survivor = regs[1]
	}
	more, moreRegs := start("c")
	since := metric(t, survivor, "scheduler_job_last_success_timestamp_seconds", map[string]string{"job": "report", "team": ""})
	leaderOf(t, append(nodes, more...))
	gaugesAgree(t, "the gauges after the leader change", []*prometheus.Registry{survivor, moreRegs[0]}, since)
	for _, n := range append(nodes, more...) {
		n.stop(5 * time.Second)
	}
	_, regs = start("d", "e")
	gaugesAgree(t, "the gauges after a restart of every replica", regs, 0)
}
