package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium, which .ci/run installs; the browser
// tests skip where it is absent rather than fetch a browser of their own.
func chromiumPath() string {
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// browser starts a headless Chromium with a fresh profile for this test
// and returns a tab's context; the browser is closed when the test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("no chromium on PATH or at /usr/bin/chromium (apt-get install chromium); skipping the browser test")
	}
	profile := t.TempDir() // made before the cleanup below, so removed after the browser exits
	// Puppeteer's defaults (among them no throttling of the page's timers,
	// which drive its polling), then what a machine with no internet and no
	// display needs.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("crash-dumps-dir", filepath.Join(profile, "crashes")),
		chromedp.ModifyCmdFunc(lowPriority),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser now, so a broken install fails here with its own error.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// lowPriority starts the browser through chrt(1) under SCHED_IDLE, and
// keeps what chromedp does by default (the browser dies with the test
// process). The browser is these tests' tool, not what they test, and as
// root it raises its own threads' priority (nice -8), so nice(1) is undone:
// SCHED_IDLE, which its setpriority calls do not change and its children
// inherit, is not. At normal priority its bursts (pages rendered in
// software, a dozen processes) took both cores from the package go test
// runs beside this one, whose replicas then had no keepalive answered for
// 3s and their lease guards ended their runs (internal/jobs' shard tests:
// three CI failures on 12-02, reproduced beside this package).
func lowPriority(cmd *exec.Cmd) {
	if chrt, err := exec.LookPath("chrt"); err == nil {
		cmd.Args = append([]string{"chrt", "--idle", "0"}, cmd.Args...)
		cmd.Path = chrt
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// pollJS waits until the page's js expression is true, looking every
// 100ms, up to the patience.
func pollJS(js string) chromedp.Action[chromedp.Void] { return pollValue[chromedp.Void](js) }

// pollValue waits as pollJS does and yields the expression's value.
func pollValue[T any](js string) chromedp.Action[T] {
	return chromedp.Poll[T](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(patience))
}

// textOf is the text of the first element matching css, read in one
// evaluation: chromedp's TextContent finds the node, then reads it, and a
// table the page re-renders in between leaves it a node id that is gone
// ("No node with given id found", seen in CI). It waits, up to the
// patience, for such an element to exist.
func textOf(ctx context.Context, css string) (string, error) {
	js := fmt.Sprintf(`(() => { const n = document.querySelector(%s); return n === null ? null : [n.textContent]; })()`, jsString(css))
	got, err := chromedp.Run(ctx, pollValue[[]string](js))
	if err != nil {
		return "", err
	}
	return got[0], nil
}

// navigate loads url in the tab, waiting up to the patience.
func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if err := chromedp.Do(sctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
}
