// Package browsertest opens report pages in headless Chromium for tests
// (chromedp): Debian's chromium, installed by scripts/chromium-deps.sh.
// Without a browser a test skips, saying why, unless CAIRN_REQUIRE_BROWSER
// is 1 (CI), where it fails.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path is the Chromium program, or "" when none is installed.
func Path() string {
	if p := os.Getenv("CAIRN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Page is one open page.
type Page struct {
	Ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// Errors are the console errors and uncaught exceptions so far.
func (p *Page) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...)
}

// Open starts a headless browser of width x height and opens file (an
// absolute path) in it, waiting until the page has drawn itself
// (body[data-ready], set once drawn). The browser ends with the test.
func Open(t testing.TB, file string, width, height int) *Page {
	t.Helper()
	bin := Path()
	if bin == "" {
		msg := "no Chromium to test the report page in: apt-get install chromium (make test installs it; scripts/chromium-deps.sh)"
		if os.Getenv("CAIRN_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("allow-file-access-from-files", true),
		chromedp.WindowSize(width, height),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	tctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	p := &Page{Ctx: tctx}
	msgs := chromedp.Console(tctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				p.mu.Lock()
				p.errors = append(p.errors, m.String())
				p.mu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS(`body[data-ready]`))); err != nil {
		t.Fatalf("opening %s in %s: %v (page errors: %q)", file, bin, err, p.Errors())
	}
	if st := Eval[string](t, p, "document.body.dataset.ready"); st != "1" {
		t.Fatalf("%s did not draw itself: %q", file, p.Errors())
	}
	return p
}

// Eval runs a JavaScript expression in the page and returns its value
// (a promise is awaited).
func Eval[T any](t testing.TB, p *Page, expr string) T {
	t.Helper()
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v (page errors: %q)", expr, err, p.Errors())
	}
	return v
}

// ShotViewport writes a PNG of what the window shows to path.
func ShotViewport(t testing.TB, p *Page, path string) {
	t.Helper()
	b, err := chromedp.Run(p.Ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	write(t, path, b)
}

// Shot writes a PNG of the element sel matches to path.
func Shot(t testing.TB, p *Page, sel, path string) {
	t.Helper()
	b, err := chromedp.Run(p.Ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", sel, err)
	}
	write(t, path, b)
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
