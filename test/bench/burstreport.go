package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// events is the events decoded per replica per run, or "-" where the
// replicas do not count them.
func events(s burstSide) string {
	if !s.EventsCounted {
		return "-"
	}
	return fmt.Sprintf("%.2f", s.EventsPerProcRn)
}

// rows are the burst scenario's lines of the figures table: one a step.
func (r burstResult) rows() []row {
	var out []row
	for _, st := range r.Steps {
		x := row{Scenario: "burst", Figure: fmt.Sprintf("%d jobs due each second, %d replicas: runs/s; delivered; p99", st.Jobs, st.Ours.Procs),
			Value: fmt.Sprintf("%.0f runs/s; %s; %.0f ms", st.Ours.RunsPerSec, pct(st.Ours.DeliveredFrac), st.Ours.Lateness.P99)}
		if st.Ref != nil {
			x.Reference = fmt.Sprintf("reference (%d bare processes): %.0f runs/s; %s; %.0f ms; %s", st.Ref.Procs, st.Ref.RunsPerSec, pct(st.Ref.DeliveredFrac), st.Ref.Lateness.P99, hostNote(st.Ours.CPU))
		}
		out = append(out, x)
	}
	out = append(out, row{Scenario: "burst", Figure: "ceiling: largest N with >= 98% of ticks delivered and p99 < 1 s",
		Value:     fmt.Sprintf("%d jobs", r.CeilingOurs),
		Reference: fmt.Sprintf("reference %d jobs (largest step %d)", r.CeilingRef, r.LargestStep)})
	return out
}

// printBurst writes the burst table, ours beside the reference at every
// step, then the overload step and the steps at other replica counts.
func printBurst(w io.Writer, reports []report) {
	b := resultOf[burstResult](reports)
	if b == nil {
		return
	}
	fmt.Fprintf(w, "\nBurst: N jobs `* * * * * *`, jitter 0, all due on the same second; %s warm-up, %s window, ticks counted delivered up to %s after it; ours: %d replicas%s; reference: %d bare processes, per tick an HTTP GET then one conditional put of the job's counter. Per run: CPU (etcd + replicas or processes), etcd revisions, index operations (etcd_mvcc range+put+delete per member; a compare counts as a range), watch events decoded per replica.\n\n",
		b.Warmup, b.Window, b.Grace, b.Replicas, historyNote(b.Steps), b.RefProcs)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| jobs due each second\t runs/s: ours / ref\t delivered: ours / ref\t lateness p50/p99/max ms: ours\t ref\t missed (recorded skipped): ours / ref\t CPU ms per run, etcd + procs: ours\t ref\t revisions per run: ours / ref\t index ops per run: ours / ref\t events per replica per run\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t")
	for _, st := range b.Steps {
		ref := burstSide{}
		if st.Ref != nil {
			ref = *st.Ref
		}
		fmt.Fprintf(tw, "| %d\t %.0f / %.0f\t %s / %s\t %s\t %s\t %d (%.0f) / %d\t %s\t %s\t %.3f / %.3f\t %.2f / %.2f\t %s\t\n",
			st.Jobs, st.Ours.RunsPerSec, ref.RunsPerSec, pct(st.Ours.DeliveredFrac), pct(ref.DeliveredFrac),
			lateMs(st.Ours.Lateness), lateMs(ref.Lateness), st.Ours.Missed, st.Ours.Skipped, ref.Missed,
			cpuMs(st.Ours), cpuMs(ref), st.Ours.RevsPerRun, ref.RevsPerRun, st.Ours.IndexOpsPerRun, ref.IndexOpsPerRun, events(st.Ours))
	}
	extra := func(label string, s burstSide) {
		fmt.Fprintf(tw, "| %d (%s)\t %.0f / -\t %s / -\t %s\t -\t %d (%.0f) / -\t %s\t -\t %.3f / -\t %.2f / -\t %s\t\n",
			s.Jobs, label, s.RunsPerSec, pct(s.DeliveredFrac), lateMs(s.Lateness), s.Missed, s.Skipped, cpuMs(s), s.RevsPerRun, s.IndexOpsPerRun, events(s))
	}
	if b.Overload != nil {
		extra(fmt.Sprintf("overload: twice our ceiling of %d", b.CeilingOurs), *b.Overload)
	}
	for _, s := range b.ReplicaSteps {
		extra(fmt.Sprintf("%d replicas", s.Procs), s)
	}
	_ = tw.Flush()
}

func lateMs(d dist) string {
	if d.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f", d.P50, d.P99, d.Max)
}

func cpuMs(s burstSide) string {
	return fmt.Sprintf("%.3f + %.3f = %.3f", s.EtcdCPUPerRun, s.ProcCPUPerRun, s.cpuPerRun())
}

// historyNote says whether ours' jobs started with full histories
// (bursthistory.go): the steps' figures then include the prune.
func historyNote(steps []burstStep) string {
	for _, st := range steps {
		if st.Ours.SeededRecords > 0 {
			return ", every job's history full from the start (history_limit records seeded)"
		}
	}
	return ", jobs new (histories not full: no record pruned)"
}
