package keys

import (
	"strings"
	"testing"
	"time"
)

const testPrefix = "/sched/"

func TestParseSlot(t *testing.T) {
	l := New(testPrefix)
	for _, tc := range []struct {
		key      string
		resource bool
		name     string
		index    int
		ok       bool
	}{
		{l.Slot("nightly-report", 0), false, "nightly-report", 0, true},
		{l.Slot("a.b_c", 12), false, "a.b_c", 12, true},
		{l.ResourceSlot("github-api", 4), true, "github-api", 4, true},
		{l.SlotOf("sync", "c-1001:EU", 0), false, "sync/c-1001:EU", 0, true},
		{l.SlotOf("sync", "", 3), false, "sync", 3, true},
		{testPrefix + "slots/job", false, "", 0, false},
		{testPrefix + "slots//1", false, "", 0, false},
		{testPrefix + "slots/job/01", false, "", 0, false},
		{testPrefix + "slots/job/-1", false, "", 0, false},
		{testPrefix + "queue/job/1", false, "", 0, false},
		{"/other/slots/job/1", false, "", 0, false},
	} {
		resource, name, index, ok := l.ParseSlot(tc.key)
		if ok != tc.ok || ok && (resource != tc.resource || name != tc.name || index != tc.index) {
			t.Errorf("ParseSlot(%q) = %v %q %d %v, want %v %q %d %v", tc.key, resource, name, index, ok, tc.resource, tc.name, tc.index, tc.ok)
		}
	}
}

// Every directory ends in "/", so one name's keys never cover another's.
func TestDirectoriesDoNotCoverLongerNames(t *testing.T) {
	l := New(testPrefix)
	for _, pair := range [][2]string{
		{l.JobSlots("a"), l.JobSlots("ab")},
		{l.Resource("a"), l.Resource("ab")},
		{l.JobRuns("a"), l.JobRuns("ab")},
		{l.Entry("a", ""), l.Entry("ab", "")},
		{l.JobSpecs("a"), l.JobSpecs("ab")},
	} {
		if strings.HasPrefix(pair[1], pair[0]) {
			t.Errorf("%q covers %q", pair[0], pair[1])
		}
	}
	for _, f := range []func() string{l.Election, l.Members, l.Jobs, l.Queue, l.Slots, l.Resources, l.Cancels, l.Runs, l.Specs} {
		if d := f(); !strings.HasSuffix(d, "/") || !strings.HasPrefix(d, testPrefix) {
			t.Errorf("directory %q must be under the prefix and end in /", d)
		}
	}
}

func TestJobStateKeys(t *testing.T) {
	l := New(testPrefix)
	if job, ok := l.CursorJob(l.Cursor("nightly")); !ok || job != "nightly" {
		t.Errorf("CursorJob(Cursor(nightly)) = %q %v", job, ok)
	}
	if job, ok := l.PausedJob(l.Paused("nightly")); !ok || job != "nightly" {
		t.Errorf("PausedJob(Paused(nightly)) = %q %v", job, ok)
	}
	if _, ok := l.PausedJob(l.Cursor("nightly")); ok {
		t.Error("a cursor key was taken for a pause marker")
	}
	if id := l.MemberID(l.Member("r1")); id != "r1" {
		t.Errorf("MemberID(Member(r1)) = %q", id)
	}
	if job, ref, ok := l.ParseSpec(l.Spec("nightly", "AbC-_1")); !ok || job != "nightly" || ref != "AbC-_1" {
		t.Errorf("ParseSpec(Spec(nightly, AbC-_1)) = %q %q %v", job, ref, ok)
	}
	for _, k := range []string{l.JobSpecs("nightly"), l.Specs() + "nightly", l.Entry("nightly", "x"), l.Specs() + "a/b/c"} {
		if _, _, ok := l.ParseSpec(k); ok {
			t.Errorf("ParseSpec(%q) took it for a spec key", k)
		}
	}
	if id := l.CancelRun(l.Cancel("j@1")); id != "j@1" {
		t.Errorf("CancelRun(Cancel(j@1)) = %q", id)
	}
}

func TestParseRate(t *testing.T) {
	l := New(testPrefix)
	for _, tc := range []struct {
		key         string
		scope, name string
		index       int
		ok          bool
	}{
		{l.RatePlace(RateJob, "sync", 0), RateJob, "sync", 0, true},
		{l.RatePlace(RateResource, "github-api", 19), RateResource, "github-api", 19, true},
		{testPrefix + "rate/other/x/1", "", "", 0, false},
		{testPrefix + "rate/job/x/01", "", "", 0, false},
		{testPrefix + "rate/job//1", "", "", 0, false},
		{l.Slot("sync", 0), "", "", 0, false},
	} {
		scope, name, index, ok := l.ParseRate(tc.key)
		if ok != tc.ok || ok && (scope != tc.scope || name != tc.name || index != tc.index) {
			t.Errorf("ParseRate(%q) = %q %q %d %v, want %q %q %d %v", tc.key, scope, name, index, ok, tc.scope, tc.name, tc.index, tc.ok)
		}
	}
	if job, key := SplitSlotGroup(SlotGroup("sync", "c-1")); job != "sync" || key != "c-1" {
		t.Errorf("SplitSlotGroup(SlotGroup(sync, c-1)) = %q %q", job, key)
	}
}

func TestAssignmentKeys(t *testing.T) {
	l := New(testPrefix)
	at := time.Date(2026, 11, 25, 17, 0, 5, 500_000_000, time.FixedZone("CET", 3600))
	if k := l.Assignment("w1", at, "g"); k != testPrefix+"assign/w1/2026-11-25T16:00:05.500000000Z/g" {
		t.Errorf("Assignment = %q", k)
	}
	if w, got, g, ok := l.ParseAssignment(l.Assignment("w1", at, "g")); !ok || w != "w1" || !got.Equal(at) || g != "g" {
		t.Errorf("ParseAssignment(Assignment(w1, at, g)) = %q %v %q %v", w, got, g, ok)
	}
	if w, got, g, c, ok := l.ParseClaimMarker(l.ClaimMarker("w1", at, "g", 12)); !ok || w != "w1" || !got.Equal(at) || g != "g" || c != 12 {
		t.Errorf("ParseClaimMarker(ClaimMarker(w1, at, g, 12)) = %q %v %q %d %v", w, got, g, c, ok)
	}
	for _, k := range []string{
		l.WorkerAssignments("w1"), testPrefix + "assign//2026-11-25T16:00:05.500000000Z/g",
		testPrefix + "assign/w1/2026-11-25T16:00:05.5Z/g", testPrefix + "assign/w1/2026-11-25T16:00:05.500000000Z/",
		testPrefix + "assign/w1/2026-11-25T16:00:05.500000000Z", l.ClaimMarker("w1", at, "g", 0),
	} {
		if _, _, _, ok := l.ParseAssignment(k); ok {
			t.Errorf("ParseAssignment(%q) took it for an assignment key", k)
		}
	}
	for _, k := range []string{
		l.AssignmentClaimed("w1", at, "g"), l.AssignmentClaimed("w1", at, "g") + "01", l.AssignmentClaimed("w1", at, "g") + "-1",
		l.Assignment("w1", at, "g"), l.AssignmentClaimed("w1", at, "g") + "1/2",
	} {
		if _, _, _, _, ok := l.ParseClaimMarker(k); ok {
			t.Errorf("ParseClaimMarker(%q) took it for a claim marker", k)
		}
	}
}

func TestIncarnations(t *testing.T) {
	w := Incarnation("replica.a", 0x694d)
	if w != "replica.a.694d" {
		t.Errorf("Incarnation = %q", w)
	}
	if id, lease, ok := ParseIncarnation(w); !ok || id != "replica.a" || lease != 0x694d {
		t.Errorf("ParseIncarnation(%q) = %q %x %v", w, id, lease, ok)
	}
	for _, bad := range []string{"w1", ".694d", "a.0", "a.-1", "a.0694d", "a.xyz", "a."} {
		if _, _, ok := ParseIncarnation(bad); ok {
			t.Errorf("ParseIncarnation(%q) took it for an incarnation", bad)
		}
	}
	l := New(testPrefix)
	if !strings.HasPrefix(l.WorkerAssignments(w), l.ReplicaAssignments("replica.a")) {
		t.Errorf("ReplicaAssignments does not cover the replica's incarnations")
	}
}

// Instants sort as keys in time order, whole seconds included.
func TestAssignmentKeysSortInTimeOrder(t *testing.T) {
	l := New(testPrefix)
	base := time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)
	times := []time.Time{base, base.Add(time.Nanosecond), base.Add(500 * time.Millisecond), base.Add(time.Second)}
	for i := 1; i < len(times); i++ {
		if a, b := l.Assignment("w", times[i-1], "g"), l.Assignment("w", times[i], "g"); a >= b {
			t.Errorf("%q does not sort before %q", a, b)
		}
	}
}

func TestLeanDirectoriesDoNotCoverLongerNames(t *testing.T) {
	l := New(testPrefix)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, pair := range [][2]string{
		{l.WorkerAssignments("w"), l.WorkerAssignments("wx")},
		{l.WorkerClaimed("w"), l.WorkerClaimed("wx")},
		{l.AssignmentClaimed("w", at, "g"), l.ClaimMarker("w", at, "gx", 0)},
	} {
		if strings.HasPrefix(pair[1], pair[0]) {
			t.Errorf("%q covers %q", pair[0], pair[1])
		}
	}
}

// Every key the layout spells has a kind of its own, and Kinds lists it.
func TestKindNamesEachKeysDirectoryOrJobState(t *testing.T) {
	l := New("/s/")
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	cases := map[string]string{
		l.Slot("a", 0):                  "slots",
		l.SlotOf("a", "k", 1):           "slots",
		l.Assignment("w1", at, "g"):     "assign",
		l.ClaimMarker("w1", at, "g", 2): "claimed",
		l.Cursor("a"):                   "jobs/cursor",
		l.SucceededInJobs("a/b"):        "jobs/succeeded",
		l.LastSuccess("a/b"):            "succeeded",
		l.Overdue("a"):                  "jobs/overdue",
		l.Paused("a"):                   "jobs/paused",
		l.Entry("a", "r1"):              "queue",
		l.Record("a", "r1"):             "runs",
		l.UnstartedMark("a", "r1"):      "unstarted",
		l.Pruned("a"):                   "pruned",
		l.ShedRecord(at, "w1", "g", 0):  "shed",
		l.Member("m"):                   "members",
		l.FanIn("a", "t"):               "fanin",
		l.RatePlace(RateJob, "a", 0):    "rate",
		l.ResourceSlot("gpu", 0):        "resources",
		l.Notification("hook", "n1"):    "outbox",
		"/t/slots/a/0":                  "other",
		"/s/nothing/here":               "other",
		"/s/jobs/a/unknown":             "other",
		"/s/lonely":                     "other",
	}
	kinds := map[string]bool{}
	for _, k := range Kinds() {
		kinds[k] = true
	}
	for key, want := range cases {
		got := l.Kind([]byte(key))
		if got != want {
			t.Errorf("Kind(%q) = %q, want %q", key, got, want)
		}
		if !kinds[got] {
			t.Errorf("Kind(%q) = %q, which Kinds does not list", key, got)
		}
	}
	key := []byte(l.SucceededInJobs("a"))
	if n := testing.AllocsPerRun(100, func() { l.Kind(key) }); n != 0 {
		t.Errorf("Kind allocates %v times a call", n)
	}
}

// A last success is written under succeeded/, which no replica watches,
// unless the writer knows of an older member: then where that member reads
// it, under jobs/.
func TestALastSuccessIsKeptOutOfJobsUnlessAnOlderMemberReadsIt(t *testing.T) {
	l := New("/s/")
	if got := l.LastSuccess("a/b"); got != "/s/succeeded/a/b" || strings.HasPrefix(got, l.Jobs()) {
		t.Errorf("LastSuccess = %q, want /s/succeeded/a/b, outside jobs/", got)
	}
	if job, ok := l.LastSuccessJob(l.LastSuccess("a/b")); !ok || job != "a/b" {
		t.Errorf("LastSuccessJob = %q, %v; want a/b", job, ok)
	}
	if _, ok := l.LastSuccessJob(l.LastSuccesses()); ok {
		t.Error("LastSuccessJob of the directory itself names a job")
	}
	old := l
	old.SuccessInJobs = true
	if got := old.LastSuccess("a"); got != l.SucceededInJobs("a") {
		t.Errorf("with SuccessInJobs, LastSuccess = %q, want %q", got, l.SucceededInJobs("a"))
	}
	if job, ok := l.SucceededJob(old.LastSuccess("a")); !ok || job != "a" {
		t.Errorf("SucceededJob = %q, %v; want a", job, ok)
	}
}
