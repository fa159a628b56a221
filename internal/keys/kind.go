package keys

import (
	"bytes"
	"strings"
)

// jobStates are the keys a job has under jobs/<job>/, by their last
// element.
var jobStates = []string{cursorState, scheduledState, pausedState, healthState, overdueState, succeededState}

// jobKinds are jobStates as Kind names them, spelled once so that Kind
// allocates nothing.
var jobKinds = func() []string {
	out := make([]string, len(jobStates))
	for i, s := range jobStates {
		out[i] = "jobs/" + s
	}
	return out
}()

// dirs are the directories directly under the prefix, without their "/".
var dirs = []string{
	electionDir, membersDir, jobsDir, queueDir, specsDir, slotsDir, resourcesDir, cancelDir, runsDir,
	unstartedDir, outboxDir, ratesDir, removedDir, assignDir, claimedDir, fanInDir, successDir, prunedDir,
	shedDir,
}

// Kinds are the values Kind returns: a directory's name ("slots"), for
// jobs/ the state's ("jobs/cursor"), and "other". A fixed set, so a metric
// labelled by it has a bounded number of series.
func Kinds() []string {
	out := make([]string, 0, len(dirs)+len(jobStates)+1)
	for _, d := range dirs {
		if d != jobsDir {
			out = append(out, strings.TrimSuffix(d, "/"))
		}
	}
	out = append(out, jobKinds...)
	return append(out, "other")
}

// Kind names what a key under the prefix is, for counting by kind: the
// directory it is in, or for a job's state its name; "other" for a key
// outside the layout. It takes the key as a watch event holds it and
// allocates nothing: it is called for every event a replica decodes.
func (l Layout) Kind(key []byte) string {
	if len(key) < len(l.Prefix) || string(key[:len(l.Prefix)]) != l.Prefix {
		return "other"
	}
	rest := key[len(l.Prefix):]
	slash := bytes.IndexByte(rest, '/')
	if slash < 0 {
		return "other"
	}
	dir := rest[:slash+1]
	if string(dir) != jobsDir {
		for _, d := range dirs {
			if string(dir) == d {
				return d[:slash]
			}
		}
		return "other"
	}
	state := rest[bytes.LastIndexByte(rest, '/')+1:]
	for i, s := range jobStates {
		if string(state) == s {
			return jobKinds[i]
		}
	}
	return "other"
}
