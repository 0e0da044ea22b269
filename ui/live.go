package ui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/text/width"

	"github.com/cairn-run/cairn/events"
)

// liveDisplay redraws a status block under the progress lines on a
// terminal: counts, and each running node with its elapsed time and, where
// an earlier run of the same address is known, its expected duration. It
// keeps what it shows from the events; t.mu guards it.
type liveDisplay struct {
	t     *Terminal
	order map[string]int // each node's place in the plan
	total int            // nodes the apply takes up
	// ran, cached, failed and skipped count the nodes ended so far.
	ran, cached, failed, skipped int
	running                      map[string]*liveNode
	exp                          map[string]time.Duration
	lines                        []string // current block
	drawn                        int      // lines on screen
	quit                         chan struct{}
	done                         chan struct{}
}

type liveNode struct {
	since    time.Time
	progress string
}

func newLiveDisplay(t *Terminal, p *events.PlanDecided) *liveDisplay {
	l := &liveDisplay{t: t, order: map[string]int{}, running: map[string]*liveNode{},
		exp: map[string]time.Duration{}, quit: make(chan struct{}), done: make(chan struct{})}
	for i, n := range p.Nodes {
		l.order[n.Node] = i
		if !n.OutsideTarget {
			l.total++
		}
	}
	go l.run()
	return l
}

func (l *liveDisplay) run() {
	defer close(l.done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-tick.C:
			l.t.mu.Lock()
			l.update()
			l.clear()
			l.draw()
			l.t.mu.Unlock()
		}
	}
}

func (l *liveDisplay) started(node string, since time.Time) {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	l.running[node] = &liveNode{since: since}
}

func (l *liveDisplay) progress(node, text string) {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	if n := l.running[node]; n != nil {
		n.progress = text
	}
}

// ended takes a node out of the running ones and counts its status ("":
// it stopped waiting, and is not done).
func (l *liveDisplay) ended(node, status string) {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	delete(l.running, node)
	switch status {
	case "ok":
		l.ran++
	case "cached":
		l.cached++
	case "failed":
		l.failed++
	case "skipped":
		l.skipped++
	}
}

// update recomputes the block; t.mu is held.
func (l *liveDisplay) update() {
	run := make([]string, 0, len(l.running))
	for n := range l.running {
		run = append(run, n)
	}
	sort.Slice(run, func(i, j int) bool { return l.order[run[i]] < l.order[run[j]] })
	done := l.ran + l.cached + l.failed + l.skipped
	lines := []string{fmt.Sprintf("  [%d/%d] ran %d, cached %d, failed %d, skipped %d, running %d",
		done, l.total, l.ran, l.cached, l.failed, l.skipped, len(run))}
	for i, node := range run {
		if i == 8 {
			lines = append(lines, fmt.Sprintf("    … and %d more", len(run)-8))
			break
		}
		ln := l.running[node]
		el := time.Since(ln.since).Round(time.Second)
		exp, ok := l.exp[node]
		if !ok {
			if l.t.o.Expect != nil {
				exp = l.t.o.Expect(node).Round(time.Second)
			}
			l.exp[node] = exp
		}
		s := fmt.Sprintf("    %s  %s", node, el)
		if ln.progress != "" {
			s += "  " + ln.progress
		}
		if exp > 0 {
			left := max(exp-el, 0)
			s += fmt.Sprintf(" (last time %s; ETA %s)", exp, left)
		}
		lines = append(lines, s)
	}
	l.lines = lines
}

// clear erases the drawn block; t.mu is held.
func (l *liveDisplay) clear() {
	if l.drawn > 0 {
		fmt.Fprintf(l.t.o.Progress, "\x1b[%dA\x1b[J", l.drawn)
		l.drawn = 0
	}
}

// draw draws the block, each line cut to the terminal's width; t.mu is
// held. A line that wrapped would take more rows than clear moves up.
func (l *liveDisplay) draw() {
	if len(l.lines) == 0 {
		return
	}
	lines := l.lines
	if l.t.o.Width != nil {
		// One column short of the width: a line that fills the last
		// column makes some terminals wrap at once.
		if w := l.t.o.Width(); w > 1 {
			lines = make([]string, len(l.lines))
			for i, s := range l.lines {
				lines[i] = cutToWidth(s, w-1)
			}
		}
	}
	fmt.Fprintln(l.t.o.Progress, strings.Join(lines, "\n"))
	l.drawn = len(lines)
}

// cutToWidth cuts s to at most cols columns, ending it with "…" where it
// is cut. It counts runes, not bytes, a wide one (East Asian, full
// width) as two columns, and cuts between runes, so the text stays valid
// UTF-8.
func cutToWidth(s string, cols int) string {
	total := 0
	for _, r := range s {
		total += runeWidth(r)
	}
	if total <= cols {
		return s
	}
	w := 0
	for i, r := range s {
		if w+runeWidth(r) > cols-1 {
			return s[:i] + "…"
		}
		w += runeWidth(r)
	}
	return s
}

// runeWidth is how many columns r takes on a terminal: 2 for a wide
// rune, 1 otherwise.
func runeWidth(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

func (l *liveDisplay) stop() {
	close(l.quit)
	<-l.done
	l.t.mu.Lock()
	l.clear()
	l.t.mu.Unlock()
}
