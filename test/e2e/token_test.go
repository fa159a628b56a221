package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

const tokenConfig = `
cluster:
  data_dir: %[2]s
api:
  listen: %[1]s
  token_file: %[3]s
  protect_reads: true
jobs:
  - name: hello
    schedule: "@manually" # only the page's trigger runs it
    exec:
      command: ["echo", "hello"]
`

// TestDashboardAsksForToken: with reads protected, the page asks for the
// bearer token, keeps it and sends it with every request, reads and writes.
func TestDashboardAsksForToken(t *testing.T) {
	ctx := browser(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startScheduler(t, nil, tokenConfig, tokenFile)
	id := replicaID(t, r, "s3cret-token")

	sctx, cancel := context.WithTimeout(ctx, 3*patience)
	defer cancel()
	err := chromedp.Do(sctx,
		chromedp.Navigate("http://"+r.Addr+"/"),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), "s3cret-token"),
		chromedp.Click(chromedp.ID("token-save")),
		pollJS(`document.querySelector('#leader-id').textContent === `+jsString(id)),
		chromedp.Click(chromedp.CSS(`button[data-action="trigger"][data-job="hello"]`)),
		pollJS(`document.querySelector('#runs tbody tr[data-job="hello"][data-outcome="succeeded"]') !== null`),
		pollJS(`document.querySelector('#auth').hidden`),
	)
	if err != nil {
		t.Fatalf("log in and trigger: %v\npage text:\n%s", err, pageText(ctx))
	}
}
