// Package browser drives headless Chromium (chromedp) against the real
// gateway for the console's browser tests. Without a browser a test skips,
// except in CI (CI=true), where it fails: .ci/run installs Debian's
// chromium.
package browser

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color/palette"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Find returns the path of a Chromium or Chrome binary.
func Find() (string, error) {
	if p := os.Getenv("TOLLGATE_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found (install Debian's chromium: apt-get install chromium; or set TOLLGATE_CHROMIUM)")
}

// Start runs a headless Chromium for t, stopped when t ends, and returns
// the context of its first tab. The flags keep it off the network (the
// closed network here refuses its background connections) and let it run
// as root.
func Start(t *testing.T) context.Context {
	t.Helper()
	path, err := Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser tests need a browser in CI: %v", err)
		}
		t.Skip(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-pings", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the browser did not start (%s): %v", path, err)
		}
		t.Skipf("the browser did not start (%s): %v", path, err)
	}
	return ctx
}

// Tab opens another tab of ctx's browser with cookies of its own (a second
// person).
func Tab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	return tab
}

// GrantClipboard lets origin's pages (in the first tab's cookies) read
// and write the clipboard.
func GrantClipboard(ctx context.Context, origin string) error {
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: "granted", Origin: origin,
		}); err != nil {
			return err
		}
	}
	return nil
}

// Screenshots saves what a test's tabs show, one PNG per page, in the
// test's artifact directory (kept with go test -artifacts), and also in
// $TOLLGATE_SCREENSHOTS when it is set (docs/console's pictures).
type Screenshots struct {
	t   *testing.T
	dir string
	n   int
}

// NewScreenshots starts t's series.
func NewScreenshots(t *testing.T) *Screenshots {
	s := &Screenshots{t: t, dir: t.ArtifactDir()}
	t.Logf("screenshots in %s", s.dir)
	return s
}

// Take saves the page of ctx as NN-name.png.
func (s *Screenshots) Take(ctx context.Context, name string) {
	s.t.Helper()
	s.n++
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	file := fmt.Sprintf("%02d-%s.png", s.n, name)
	if err := os.WriteFile(filepath.Join(s.dir, file), b, 0o644); err != nil {
		s.t.Fatal(err)
	}
	if dir := os.Getenv("TOLLGATE_SCREENSHOTS"); dir != "" {
		small, err := smallPNG(b)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".png"), small, 0o644)
		}
		if err != nil {
			s.t.Fatal(err)
		}
	}
}

// smallPNG is a screenshot in 256 colours, compressed hard: a third of
// the size, for the pictures the docs commit.
func smallPNG(b []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	p := image.NewPaletted(img.Bounds(), palette.Plan9)
	draw.Draw(p, p.Bounds(), img, image.Point{}, draw.Src)
	var out bytes.Buffer
	err = (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, p)
	return out.Bytes(), err
}

// Mobile sets a phone's viewport (or back to the desktop's with false).
func Mobile(ctx context.Context, on bool) error {
	if on {
		return chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	}
	return chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900))
}

// TimeZone makes the browser's zone name (an IANA id).
func TimeZone(ctx context.Context, zone string) error {
	_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
	return err
}

// Dark makes the pages see prefers-color-scheme: dark (or light again).
func Dark(ctx context.Context, on bool) error {
	scheme := "light"
	if on {
		scheme = "dark"
	}
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
	return err
}

// Fetch runs fetch(url, init) in the page and returns the status, the
// named header and the body: a request with the page's cookies.
func Fetch(ctx context.Context, url, init, header string) (status int, value, body string, err error) {
	if header == "" {
		header = "content-type"
	}
	js := fmt.Sprintf(`fetch(%q, %s).then(async r => ({status: r.status, header: r.headers.get(%q) || "", body: await r.text()}))`,
		url, orEmpty(init), header)
	res, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Status int    `json:"status"`
		Header string `json:"header"`
		Body   string `json:"body"`
	}](js, chromedp.EvalAwaitPromise))
	return res.Status, res.Header, res.Body, err
}

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// WaitText waits until sel's text contains want.
func WaitText(ctx context.Context, sel, want string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
			`(document.querySelector(%q) || {innerText: ""}).innerText`, sel)))
		if err == nil && strings.Contains(got, want) {
			return got, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("%s shows %q, not %q", sel, got, want)
			}
			return got, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
