package deploy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	engine "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// sample is one float sample of a series the rule test loads.
type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }

// seriesSet walks the loaded series that match a selector.
type seriesSet struct {
	list []storage.Series
	i    int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i <= len(s.list) }
func (s *seriesSet) At() storage.Series                { return s.list[s.i-1] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// loaded is a Prometheus storage holding series, one value a minute from
// time 0, as promtool's rule tests load them.
func loaded(series map[string][]float64) storage.Queryable {
	var all []storage.Series
	for text, values := range series {
		lset, err := promql.ParseMetricSelector(text)
		if err != nil {
			panic(err)
		}
		b := labels.NewBuilder(labels.EmptyLabels())
		for _, m := range lset {
			b.Set(m.Name, m.Value)
		}
		var ss []chunks.Sample
		for i, v := range values {
			ss = append(ss, sample{t: int64(i) * time.Minute.Milliseconds(), f: v})
		}
		all = append(all, storage.NewListSeries(b.Labels(), ss))
	}
	slices.SortFunc(all, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			var out []storage.Series
			for _, s := range all {
				if matchAll(s.Labels(), ms) {
					out = append(out, s)
				}
			}
			return &seriesSet{list: out}
		}}}
}

func matchAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

// TestOverdueAlertRoutesByTeam evaluates SchedulerJobOverdue as shipped
// with Prometheus' own engine, as promtool's rule tests do, over two
// replicas that report the same gauges: it fires once a job (not once a
// replica), with the job's team for routing, while the job is overdue,
// and not before nor after.
func TestOverdueAlertRoutesByTeam(t *testing.T) {
	rules, _ := alertRules(t)
	expr := ""
	for _, r := range rules {
		if r.Alert == "SchedulerJobOverdue" {
			expr = r.Expr
		}
	}
	if expr == "" {
		t.Fatal("no SchedulerJobOverdue in " + rulesFile)
	}
	store := loaded(map[string][]float64{
		`scheduler_job_overdue{job="backup", team="storage", instance="a"}`: {0, 0, 1, 1, 0},
		`scheduler_job_overdue{job="backup", team="storage", instance="b"}`: {0, 0, 1, 1, 0},
		`scheduler_job_overdue{job="report", team="web", instance="a"}`:     {0, 0, 0, 0, 0},
		`scheduler_job_overdue{job="report", team="web", instance="b"}`:     {0, 0, 0, 0, 0},
	})
	eng := engine.NewEngine(engine.EngineOpts{MaxSamples: 10000, Timeout: 10 * time.Second, LookbackDelta: 5 * time.Minute})
	for minute, want := range []string{"", "", `{job="backup", team="storage"} => 1`, `{job="backup", team="storage"} => 1`, ""} {
		q, err := eng.NewInstantQuery(context.Background(), store, nil, expr, time.UnixMilli(0).Add(time.Duration(minute)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		res := q.Exec(context.Background())
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		v, err := res.Vector()
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, s := range v {
			got += fmt.Sprintf("%s => %v", s.Metric, s.F)
		}
		if got != want {
			t.Errorf("minute %d: %s gives %q, want %q", minute, expr, got, want)
		}
		q.Close()
	}
}
