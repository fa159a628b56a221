package fault

import (
	"bytes"
	"os"
	"path/filepath"
)

// takeOvers counts, in the replicas' logs of dir, the assignments a backup
// took over from a peer that let them pass (docs/protocol.md,
// "Take-over"): the summary prints it, so a run shows the path was under
// its faults.
func takeOvers(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n += bytes.Count(b, []byte("took over an assignment"))
	}
	return n
}
