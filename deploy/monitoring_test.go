package deploy

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

const (
	rulesFile     = "monitoring/rules.yaml"
	dashboardFile = "monitoring/grafana-dashboard.json"
	readmeFile    = "README.md"
)

// promql is Prometheus' own parser with its default functions, so a query
// it rejects would be rejected by the server too.
var promql = parser.NewParser(parser.Options{})

// grafanaVars stands in for the variables Grafana replaces before a query
// reaches Prometheus; PromQL does not know them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// query is one PromQL expression of the rules or the dashboard.
type query struct {
	where string // the alert, or the panel and target
	text  string // as written in the file
	expr  parser.Expr
}

// selectors are the series a query reads.
func (q query) selectors() []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(q.expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// metricName is the name a selector reads, from name{...} or {__name__="..."}.
func metricName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// alertRules parses the rules file with Prometheus' rule parser, which also
// parses every expression and annotation template, and returns the alerts.
func alertRules(t *testing.T) ([]rulefmt.Rule, []query) {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.LegacyValidation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", rulesFile, err)
	}
	if groups == nil || t.Failed() {
		t.FailNow()
	}
	var rules []rulefmt.Rule
	var qs []query
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			expr, err := promql.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: alert %s: %v", rulesFile, r.Alert, err)
			}
			rules = append(rules, r)
			qs = append(qs, query{where: "alert " + r.Alert, text: r.Expr, expr: expr})
		}
	}
	return rules, qs
}

// dashboard is the part of Grafana's dashboard model the tests read.
type dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int      `json:"id"`
	Title   string   `json:"title"`
	Type    string   `json:"type"`
	Targets []target `json:"targets"`
	Panels  []panel  `json:"panels"` // a collapsed row's panels
}

type target struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
}

// dashboardQueries reads the Grafana board and parses every target.
func dashboardQueries(t *testing.T) (dashboard, []query) {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var qs []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
			}
			for _, tg := range p.Targets {
				where := fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)
				expr, err := promql.ParseExpr(grafanaVars.Replace(tg.Expr))
				if err != nil {
					t.Errorf("%s: %s: %q: %v", dashboardFile, where, tg.Expr, err)
					continue
				}
				qs = append(qs, query{where: where, text: tg.Expr, expr: expr})
			}
		}
	}
	walk(d.Panels)
	return d, qs
}

// alertNames are the alerts deploy/README.md promises.
var alertNames = []string{
	"SchedulerNoLeader", "SchedulerSeveralLeaders", "SchedulerRunFailures", "SchedulerRunsLost",
	"SchedulerMissedTicks", "SchedulerLateStarts", "SchedulerSessionLost", "SchedulerNotificationsDropped", "SchedulerJobOverdue",
	"SchedulerConfigReloadFailed",
}

// TestAlertRules: the rules load in Prometheus, every alert says how bad it
// is and what happened, and they are the alerts the README lists.
func TestAlertRules(t *testing.T) {
	rules, _ := alertRules(t)
	readme := readFile(t, readmeFile)
	var got []string
	for _, r := range rules {
		got = append(got, r.Alert)
		if r.Alert == "" {
			t.Errorf("rule %q: want alerting rules only", r.Record)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("alert %s: want summary and description annotations", r.Alert)
		}
		if !strings.Contains(readme, "`"+r.Alert+"`") {
			t.Errorf("alert %s is not listed in %s", r.Alert, readmeFile)
		}
	}
	if !slices.Equal(got, alertNames) {
		t.Errorf("alerts %q, want %q", got, alertNames)
	}
}

// dashboardMetrics are what the board must show: runs by outcome, lateness,
// slots, leadership, claims, start marks and reloads.
var dashboardMetrics = []string{
	"scheduler_runs_total", "scheduler_schedule_lateness_seconds_bucket", "scheduler_slots_in_use",
	"scheduler_is_leader", "scheduler_claim_duration_seconds_bucket", "scheduler_start_mark_seconds_bucket",
	"scheduler_config_reloads_total",
}

// TestGrafanaDashboard: every panel's query parses as PromQL, the board
// covers dashboardMetrics, and the README lists each panel with its queries
// exactly as the board runs them.
func TestGrafanaDashboard(t *testing.T) {
	d, qs := dashboardQueries(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("%s: want a title and a fixed uid, so imports replace rather than duplicate", dashboardFile)
	}
	readme := readFile(t, readmeFile)
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("%s: panel id %d used twice", dashboardFile, p.ID)
		}
		ids[p.ID] = true
		if !strings.Contains(readme, p.Title) {
			t.Errorf("panel %q is not listed in %s", p.Title, readmeFile)
		}
	}
	shown := map[string]bool{}
	for _, q := range qs {
		if !strings.Contains(readme, "`"+q.text+"`") {
			t.Errorf("%s: query `%s` is not in %s", q.where, q.text, readmeFile)
		}
		for _, vs := range q.selectors() {
			shown[metricName(vs)] = true
		}
	}
	for _, m := range dashboardMetrics {
		if !shown[m] {
			t.Errorf("%s: no panel reads %s", dashboardFile, m)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
