package demodata

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress reports the orders written: a redrawn bar on a terminal, a line per 10%
// otherwise, nothing without a writer.
type progress struct {
	w        io.Writer
	tty      bool
	total    int
	start    time.Time
	lastDraw time.Time
	lastTen  int
}

func newProgress(w io.Writer, total int, start time.Time) *progress {
	p := &progress{w: w, total: total, start: start}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

func (p *progress) rate(done int) float64 {
	if s := time.Since(p.start).Seconds(); s > 0 {
		return float64(done) / s
	}
	return 0
}

func (p *progress) update(done int) {
	if p.w == nil || p.total == 0 {
		return
	}
	if p.tty {
		if time.Since(p.lastDraw) < 100*time.Millisecond && done < p.total {
			return
		}
		p.lastDraw = time.Now()
		const width = 30
		filled := width * done / p.total
		eta := ""
		if r := p.rate(done); r > 0 && done < p.total {
			eta = fmt.Sprintf("  ETA %s", time.Duration(float64(p.total-done)/r*float64(time.Second)).Round(time.Second))
		}
		fmt.Fprintf(p.w, "\r[%s%s] %3d%%  %d/%d orders  %.0f orders/s%s\x1b[K",
			strings.Repeat("█", filled), strings.Repeat("░", width-filled), 100*done/p.total, done, p.total, p.rate(done), eta)
		return
	}
	if ten := 10 * done / p.total; ten > p.lastTen { // one line per crossed tenth
		p.lastTen = ten
		fmt.Fprintf(p.w, "demo data: %3d%% (%d/%d orders, %.0f orders/s)\n", ten*10, done, p.total, p.rate(done))
	}
}

func (p *progress) finish(done int) {
	if p.w == nil || p.total == 0 {
		return
	}
	p.update(done)
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
