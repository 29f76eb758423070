package htmlreport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// chromium finds headless Chromium (Debian's package chromium, which
// scripts/deps.sh installs), or skips the test saying how to get it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed, so the pages cannot be opened in a browser: scripts/deps.sh installs it (apt-get install chromium)")
	return ""
}

// browse opens a page in headless Chromium with every host name resolving
// to nothing, and a net log of what it asked for. It returns what the mode
// flag gave on stdout (--dump-dom: the DOM) and the page's own requests:
// the URL requests made in the page's network partition (file://), which
// leaves out the browser's own background traffic (updates, spelling).
func browse(t *testing.T, bin, page string, width int, mode ...string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	netlog := filepath.Join(dir, "net.json")
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--disable-background-networking", "--disable-component-update",
		"--user-data-dir=" + filepath.Join(dir, "profile"),
		`--host-resolver-rules=MAP * ~NOTFOUND`, "--log-net-log=" + netlog,
		fmt.Sprintf("--window-size=%d,1600", width)}, mode...)
	args = append(args, "file://"+page)
	// A generous bound, not a timing assertion: a browser that never
	// returns fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("chromium %s: %v", strings.Join(mode, " "), err)
	}
	// Chromium leaves helpers (zygote, GPU) in its process group: end them
	// once the leader has exited and before it is reaped. While it is a
	// zombie its pid, and so the group's id, names no one else's group;
	// after, it may be another test's build (pid_max is 32768 here).
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(mode, " "), err, stderr.String())
	}
	return stdout.String(), pageRequests(t, netlog)
}

// pageRequests reads a Chromium net log and lists the URLs of the URL
// requests started on behalf of a file:// page.
func pageRequests(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("net log: %v", err)
	}
	var log struct {
		Constants struct {
			EventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int `json:"type"`
			Params struct {
				URL string `json:"url"`
				NIK string `json:"network_isolation_key"`
			} `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &log); err != nil {
		// Chromium may stop before closing the log's JSON: close it.
		s := strings.TrimRight(strings.TrimSpace(string(b)), ",") + "]}"
		if err2 := json.Unmarshal([]byte(s), &log); err2 != nil {
			t.Fatalf("net log %s: %v", path, err)
		}
	}
	start, ok := log.Constants.EventTypes["URL_REQUEST_START_JOB"]
	if !ok || len(log.Events) == 0 {
		t.Fatalf("net log %s has no URL_REQUEST_START_JOB type or no events: this Chromium logs differently", path)
	}
	var urls []string
	for _, e := range log.Events {
		if e.Type == start && strings.Contains(e.Params.NIK, "file://") {
			urls = append(urls, e.Params.URL)
		}
	}
	return urls
}

// TestPagesInChromium opens each golden page in headless Chromium, 1400
// and 700 px wide: the screenshot is not blank, the DOM holds the verdict
// and the failing step's mark, and the page asked the network for
// nothing (a page that does fetch is caught the same way: the check is
// not empty). Measured as drawn: the lane labels are as large at 700 px
// as at 1400 px, the page fits the window, and the steps table's checkbox
// narrows it to the steps that differ.
func TestPagesInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()

	fetching := filepath.Join(dir, "fetching.html")
	if err := os.WriteFile(fetching, []byte(`<!DOCTYPE html><html><body><img src="http://example.com/x.png"><p>x</p></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, reqs := browse(t, bin, fetching, 1400, "--dump-dom"); len(reqs) != 1 || reqs[0] != "http://example.com/x.png" {
		t.Fatalf("a page that fetches an image: requests seen %q, want the image's: the net log check sees nothing", reqs)
	}

	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			page := filepath.Join(dir, g.name+".html")
			doc := render(t, g.name)
			if err := os.WriteFile(page, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			// The page as served, and a copy with a probe that measures
			// it as drawn (the page itself has no script).
			probed := filepath.Join(dir, g.name+"-probed.html")
			if err := os.WriteFile(probed, []byte(strings.Replace(string(doc), "</body>", probeScript+"</body>", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			differ, rows := strings.Count(string(doc), " d\"><td>"), strings.Count(string(doc), "<table class=\"st\">")
			var lane1400 float64
			for _, width := range []int{1400, 700} {
				dom, reqs := browse(t, bin, page, width, "--dump-dom")
				if len(reqs) > 0 {
					t.Errorf("%d px: the page asked the network for %q: it must fetch nothing", width, reqs)
				}
				if !strings.Contains(dom, `<h1 id="verdict">`+g.verdict+`</h1>`) {
					t.Errorf("%d px: the DOM lacks the verdict %s in its heading", width, g.verdict)
				}
				if mark := fmt.Sprintf(`id="s0-failure" class="failure" data-step="%d"`, g.failure); !strings.Contains(dom, mark) {
					t.Errorf("%d px: the DOM lacks the failing step's mark (%s)", width, mark)
				}
				p := probe(t, bin, probed, width)
				// Lane labels are drawn at their size, not scaled down
				// with the timeline: as large at 700 px as at 1400 px.
				if width == 1400 {
					lane1400 = p.Lane
				}
				if p.Lane < 11 || p.Lane < lane1400*0.95 {
					t.Errorf("%d px: lane labels %.1f px high (%.1f at 1400 px): too small to read", width, p.Lane, lane1400)
				}
				if p.ScrollWidth > width {
					t.Errorf("%d px: the page is %d px wide: it must fit the window (the timeline scrolls within itself)", width, p.ScrollWidth)
				}
				// The steps table, narrowed by its checkbox to the steps
				// that differ: CSS alone hides the others.
				if p.Tables != rows || p.Rows == 0 {
					t.Errorf("%d px: %d steps tables with %d rows, want %d tables, with rows", width, p.Tables, p.Rows, rows)
				}
				if p.Shown != differ || p.Shown >= p.Rows {
					t.Errorf("%d px: the filter shows %d of %d step rows, want the %d that differ", width, p.Shown, p.Rows, differ)
				}
				shot := filepath.Join(dir, fmt.Sprintf("%s-%d.png", g.name, width))
				_, reqs = browse(t, bin, page, width, "--screenshot="+shot)
				if len(reqs) > 0 {
					t.Errorf("%d px: the page asked the network for %q while drawn", width, reqs)
				}
				ink, total := inked(t, shot)
				// A blank page is all white; a report page is text, tables and
				// coloured marks over a good part of the window.
				if ink < total/50 {
					t.Errorf("screenshot %s: %d of %d pixels not white: the page looks blank", shot, ink, total)
				}
				if os.Getenv("KAVACH_KEEP_SCREENSHOTS") != "" {
					keep := filepath.Join(os.Getenv("KAVACH_KEEP_SCREENSHOTS"), filepath.Base(shot))
					if b, err := os.ReadFile(shot); err == nil {
						os.WriteFile(keep, b, 0o644)
					}
				}
			}
		})
	}
}

// probeScript measures a page as Chromium draws it and writes what it
// found into the body's data-probe attribute, for --dump-dom: the
// smallest lane label's height, the page's width, and the steps tables'
// rows before and after ticking their checkboxes.
const probeScript = `<script>
(function () {
  var p = {lane: 1e9, scroll_width: document.documentElement.scrollWidth, tables: 0, rows: 0, shown: 0};
  document.querySelectorAll("svg.tl text.lane").forEach(function (e) { p.lane = Math.min(p.lane, e.getBoundingClientRect().height); });
  document.querySelectorAll(".stepfilter").forEach(function (f) {
    p.tables++;
    f.querySelector("input").checked = true;
    f.querySelectorAll("tbody tr").forEach(function (r) { p.rows++; if (getComputedStyle(r).display !== "none") p.shown++; });
  });
  document.body.setAttribute("data-probe", JSON.stringify(p));
})();
</script>`

type probed struct {
	Lane        float64 `json:"lane"`
	ScrollWidth int     `json:"scroll_width"`
	Tables      int     `json:"tables"`
	Rows        int     `json:"rows"`
	Shown       int     `json:"shown"`
}

// probe opens a page carrying probeScript and reads what it measured.
func probe(t *testing.T, bin, page string, width int) probed {
	t.Helper()
	dom, _ := browse(t, bin, page, width, "--dump-dom")
	m := regexp.MustCompile(`data-probe="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("%d px: the probe wrote nothing: the page did not run it", width)
	}
	var p probed
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &p); err != nil {
		t.Fatalf("%d px: probe %s: %v", width, m[1], err)
	}
	return p
}

// inked counts a PNG's pixels that are not white, and all its pixels.
func inked(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				n++
			}
		}
	}
	return n, b.Dx() * b.Dy()
}
