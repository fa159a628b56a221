package target

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewExecutorChecksSettings: a supervisor or cgroup parent that cannot
// be used is refused with a message that names the setting and quotes it.
func TestNewExecutorChecksSettings(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"missing supervisor", Options{Supervisor: filepath.Join(dir, "gone")},
			`target: supervisor "` + filepath.Join(dir, "gone") + `": stat ` + filepath.Join(dir, "gone") + `: no such file or directory; name this binary`},
		{"supervisor is a directory", Options{Supervisor: dir},
			`target: supervisor "` + dir + `" is not an executable file`},
		{"supervisor not executable", Options{Supervisor: plain},
			`target: supervisor "` + plain + `" is not an executable file`},
		{"cgroup parent not a cgroup", Options{CgroupParent: dir},
			`target: cgroup parent "` + dir + `" is not a cgroup v2 directory (no such file or directory)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewExecutor(tc.opts)
			if err == nil {
				e.Close()
				t.Fatalf("NewExecutor(%+v) took the settings", tc.opts)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to begin %q", err, tc.want)
			}
		})
	}
	e, err := NewExecutor(Options{})
	if err != nil {
		t.Fatalf("the zero Options: %v", err)
	}
	e.Close()
}

// TestDiscoverUnsupervised: a binary whose main does not call Supervise
// gets no supervisor, and the log says why.
func TestDiscoverUnsupervised(t *testing.T) {
	rec := newRecorder()
	o := Options{Logger: slog.New(rec)}.Discover(false)
	if o.Supervisor != "" {
		t.Errorf("supervisor %q for a binary that does not supervise", o.Supervisor)
	}
	found := false
	for _, l := range rec.lines() {
		found = found || strings.HasPrefix(l, "WARN exec runs are not supervised") && strings.Contains(l, "does not call target.Supervise")
	}
	if !found {
		t.Errorf("no warning among %q", rec.lines())
	}
}
