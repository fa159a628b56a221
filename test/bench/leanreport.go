package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// rows are the lean floor's lines of the figures table: one a step.
func (r leanResult) rows() []row {
	var out []row
	for _, s := range r.Steps {
		ref := fmt.Sprintf("predicted %.2f index ops, %.3f revisions per run; %d runs, %d failed txns, %d errors; cores: etcd %.2f, bench %.2f, %s",
			s.Predicted.IndexOps, s.Predicted.Revisions, s.Runs, s.Failed, s.Errors, s.CPU["etcd"], s.CPU["bench"], hostNote(s.CPU))
		if r.Floor != nil {
			ref = fmt.Sprintf("today's floor (batches of %d): %.3f ms, %.2f index ops; ", r.Floor.Batch, r.Floor.EtcdCPUPerRun, r.Floor.IndexOpsPerRun) + ref
		}
		out = append(out, row{Scenario: "leanfloor",
			Figure: fmt.Sprintf("docs/protocol.md's fast path, %d runs an instant, %d workers, %d records a job held: runs/s; etcd CPU per run; index ops per run", s.RunsPerInstant, s.Workers, s.History),
			Value:  fmt.Sprintf("%.0f runs/s; %.3f ms; %.2f", s.RunsPerSec, s.EtcdCPUPerRun, s.IndexOpsPerRun), Reference: ref})
	}
	return out
}

// leanBeside is what the table prints beside a lean step: the burst
// reference's figures at the same N, when the burst scenario ran.
func leanBeside(b *burstResult, n int) string {
	if b == nil {
		return "not measured"
	}
	for _, st := range b.Steps {
		if st.Jobs == n && st.Ref != nil {
			return fmt.Sprintf("%.3f ms; %.2f; %.3f", st.Ref.EtcdCPUPerRun, st.Ref.IndexOpsPerRun, st.Ref.RevsPerRun)
		}
	}
	return "not measured at this N"
}

// printLeanFloor writes the lean floor's table: each step beside the burst
// reference at its N and today's floor at batches of the claim chunk.
func printLeanFloor(w io.Writer, reports []report) {
	lean, b := resultOf[leanResult](reports), resultOf[burstResult](reports)
	if lean == nil {
		return
	}
	floor := "not measured"
	if f := lean.Floor; f != nil && f.Runs > 0 {
		floor = fmt.Sprintf("%.0f runs/s; %.3f ms; %.2f; %.3f", f.RunsPerSec, f.EtcdCPUPerRun, f.IndexOpsPerRun, float64(f.Revisions)/float64(f.Runs))
	}
	fmt.Fprintf(w, "\nLean floor: docs/protocol.md's fast path driven by %d bare clients (one per replica, through its proxies), N runs due each second; cursors written once per %d instants, claims in chunks of %d, releases %d a commit. A lower bound: nothing watches, no target is called, no compare fails. etcd idle: %.3f cores, measured before the steps. Index operations: etcd_mvcc range+put+delete per member (a compare counts as a range).\n\n",
		lean.Workers, lean.CursorWindow, lean.Chunk, lean.ReleaseBatch, lean.EtcdIdleCores)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| runs per instant\t records a job held (at the end, in all)\t runs/s\t etcd CPU ms per run (above idle)\t index ops per run: measured / predicted\t revisions per run: measured / predicted\t burst reference, same N: etcd CPU ms per run; index ops; revisions\t today's floor, batches of the chunk: runs/s; etcd CPU ms per run; index ops; revisions\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t")
	for _, s := range lean.Steps {
		fmt.Fprintf(tw, "| %d\t %d (%d)\t %.0f\t %.3f (%.3f)\t %.2f / %.2f\t %.3f / %.3f\t %s\t %s\t\n", s.RunsPerInstant, s.History, s.RecordsHeld, s.RunsPerSec, s.EtcdCPUPerRun, s.EtcdCPUAboveIdle,
			s.IndexOpsPerRun, s.Predicted.IndexOps, s.RevsPerRun, s.Predicted.Revisions, leanBeside(b, s.RunsPerInstant), floor)
	}
	_ = tw.Flush()
}
