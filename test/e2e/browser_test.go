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
		// Its singleton socket's directory too: made under TMPDIR, and
		// left in /tmp when the browser is killed at the test's end
		// (sixteen a CI run, org.chromium.Chromium.*).
		chromedp.Env("TMPDIR="+profile),
		chromedp.ModifyCmdFunc(samePriority),
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

// samePriority starts the browser through setpriv(1) without CAP_SYS_NICE,
// and keeps what chromedp does by default (the browser dies with the test
// process). Started as root, the browser raises its own threads to nice -8,
// above the tests: at its bursts (pages rendered in software, a dozen
// processes) the package go test runs beside this one had no keepalive
// answered for 3s and its lease guards ended its runs (internal/jobs' shard
// tests, CI on 12-02, reproduced beside this package; the larger load
// there turned out to be this package's many-jobs test starting sixty
// commands at once, which calls an HTTP target since). Without the
// capability its raises fail, and it runs at the tests' priority; below
// theirs (SCHED_IDLE, tried) this package's own many-jobs test starved it
// (CI, 12-02 11:22: its fifty rows not shown within a minute).
func samePriority(cmd *exec.Cmd) {
	// Only root has the capability (and may drop it from the bounding set).
	if setpriv, err := exec.LookPath("setpriv"); err == nil && os.Geteuid() == 0 {
		cmd.Args = append([]string{"setpriv", "--inh-caps", "-sys_nice", "--bounding-set", "-sys_nice"}, cmd.Args...)
		cmd.Path = setpriv
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
