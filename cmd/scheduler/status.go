package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/etcdsched/scheduler/client"
)

// statusCommand: scheduler status, what the replica at --server says of
// itself: what it runs, whom it follows, whether its last reload took, and
// what it still has to tell the notification sinks.
func statusCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return readCommand(ctx, "scheduler status", args, stdout, stderr, (*client.Client).Status,
		func(st client.Status) any { return st.Raw },
		func(out output, st client.Status) error { return writeStatus(out.stdout, out.view, st) })
}

// statusLabel is the width of the names' column ("notifications:" and the
// gap after it): a value line fits the view's width less it.
const statusLabel = len("notifications:") + colGap

// writeStatus prints one line a fact, a name and its value; a failed
// reload's errors follow on lines of their own under the value, each cut
// to the view's width (-o wide: uncut).
func writeStatus(w io.Writer, v view, st client.Status) error {
	tw := tabwriter.NewWriter(w, 0, 0, colGap, ' ', 0)
	line := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	line("replica", st.ID+", version "+st.Version+", started "+stamp(st.StartedAt))
	line("leader", leaderLine(st))
	line("config", st.ConfigFile+", hash "+st.ConfigHash)
	for _, f := range st.ConfigFiles[min(1, len(st.ConfigFiles)):] {
		line("  team "+f.Team, f.Path+", hash "+f.Hash)
	}
	line("last reload", reloadLine(st))
	for _, e := range reloadErrors(st) {
		if v.width > 0 {
			e = cut(e, max(v.width-statusLabel, minElastic))
		}
		fmt.Fprintf(tw, "\t%s\n", e)
	}
	line("notifications", notificationsLine(st))
	etcd := strings.Join(st.EtcdEndpoints, ", ")
	if st.EmbeddedEtcd {
		etcd = "embedded, " + etcd
	}
	line("etcd", etcd)
	return tw.Flush()
}

func leaderLine(st client.Status) string {
	switch {
	case st.IsLeader:
		return st.ID + " (this replica)"
	case st.Leader == "":
		return "none right now (see 'scheduler leader')"
	}
	return st.Leader
}

// reloadLine: a reload that failed leaves the replica on its previous
// config, which is what an operator must learn here.
func reloadLine(st client.Status) string {
	switch {
	case st.LastReloadAt.IsZero():
		return "none since start"
	case st.LastReloadError != "":
		return "FAILED at " + stamp(st.LastReloadAt) + ", still running the config before it:"
	}
	return "ok at " + stamp(st.LastReloadAt)
}

// reloadErrors are the lines of a failed reload's error (validation says
// each problem on a line of its own), blank ones left out.
func reloadErrors(st client.Status) []string {
	if st.LastReloadAt.IsZero() {
		return nil
	}
	var out []string
	for _, l := range strings.Split(st.LastReloadError, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func notificationsLine(st client.Status) string {
	if st.PendingNotifications == 0 {
		return "none pending"
	}
	sinks := make([]string, 0, len(st.PendingBySink))
	for s := range st.PendingBySink {
		sinks = append(sinks, s)
	}
	slices.Sort(sinks)
	for i, s := range sinks {
		sinks[i] = s + " " + strconv.Itoa(st.PendingBySink[s])
	}
	return fmt.Sprintf("%d pending (%s), oldest created %s", st.PendingNotifications, strings.Join(sinks, ", "), stamp(st.OldestNotification))
}
