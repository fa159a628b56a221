package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode feeds Parse arbitrary bytes. Whatever the input, Parse must
// return either a config that validates or an *Error, never panic, never
// print more than MaxPrinted problems, and a config it accepts must
// survive the JSON trip a queue entry makes. The seeds are every file of
// testdata but the merge bomb and the example; more are in
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range append(files, "example.yaml") {
		// The bomb costs its whole budget, 0.1s and more, on every
		// mutation: the fuzzer would spend its time there.
		// TestBadFiles runs it.
		if strings.Contains(name, "bomb") {
			continue
		}
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A name in a directory of its own: a headers_file or env_file
		// the fuzzer writes resolves there, to nothing.
		cfg, err := Parse(filepath.Join(t.TempDir(), "fuzz.yaml"), data)
		if err != nil {
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("error %T, not *Error: %v", err, err)
			}
			if cfg != nil {
				t.Fatal("a Config came back with the error")
			}
			if len(cerr.Problems) == 0 {
				t.Fatal("an *Error without problems")
			}
			if n := strings.Count(err.Error(), "\n") + 1; n > MaxPrinted+1 {
				t.Fatalf("%d lines printed", n)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted by Parse, refused by Validate:\n%v", err)
		}
		_ = cfg.Hash()
		for _, j := range cfg.Jobs {
			b, err := json.Marshal(j)
			if err != nil {
				t.Fatalf("job %s does not encode: %v", j.Name, err)
			}
			var back Job
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("job %s does not decode: %v\n%s", j.Name, err, b)
			}
			if _, err := back.ParsedSchedule(); err != nil {
				t.Fatalf("job %s: schedule %q valid in the file, not after JSON: %v", j.Name, j.Schedule, err)
			}
			_ = j.Redacted()
		}
	})
}
