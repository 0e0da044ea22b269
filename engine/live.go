package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// liveDisplay redraws a status block under the progress lines on a
// terminal: counts, and each running node with its elapsed time and, where
// an earlier run of the same address is known, its expected duration.
type liveDisplay struct {
	a     *applier
	lines []string // current block, guarded by a.mu
	drawn int      // lines on screen
	quit  chan struct{}
	done  chan struct{}
	exp   map[int]time.Duration
}

func newLiveDisplay(a *applier) *liveDisplay {
	l := &liveDisplay{a: a, quit: make(chan struct{}), done: make(chan struct{}), exp: map[int]time.Duration{}}
	go l.run()
	return l
}

func (l *liveDisplay) run() {
	defer close(l.done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-t.C:
			l.a.mu.Lock()
			l.clear()
			l.draw()
			l.a.mu.Unlock()
		}
	}
}

// update recomputes the block; called by the scheduler goroutine.
func (l *liveDisplay) update() {
	a := l.a
	var run []*nodeState
	for _, ns := range a.sched.running {
		run = append(run, ns)
	}
	sort.Slice(run, func(i, j int) bool { return run[i].n.ID < run[j].n.ID })
	total := 0
	for _, ns := range a.nodes {
		if !ns.pn.Skipped {
			total++
		}
	}
	done := a.res.Ran + a.res.Cached + a.res.Failed + a.res.Skipped
	lines := []string{fmt.Sprintf("  [%d/%d] ran %d, cached %d, failed %d, skipped %d, running %d",
		done, total, a.res.Ran, a.res.Cached, a.res.Failed, a.res.Skipped, len(run))}
	for i, ns := range run {
		if i == 8 {
			lines = append(lines, fmt.Sprintf("    … and %d more", len(run)-8))
			break
		}
		el := time.Since(ns.started).Round(time.Second)
		exp, ok := l.exp[ns.n.ID]
		if !ok {
			if k := a.cache.LastKey(a.g.Config.Name, ns.n.Addr); k != "" {
				if r, ok := a.cache.Lookup(k); ok {
					exp = r.Ended.Sub(r.Started).Round(time.Second)
				}
			}
			l.exp[ns.n.ID] = exp
		}
		s := fmt.Sprintf("    %s  %s", ns.n.Addr, el)
		a.mu.Lock()
		if ns.progress != "" {
			s += "  " + ns.progress
		}
		a.mu.Unlock()
		if exp > 0 {
			left := exp - el
			if left < 0 {
				left = 0
			}
			s += fmt.Sprintf(" (last time %s; ETA %s)", exp, left)
		}
		lines = append(lines, s)
	}
	a.mu.Lock()
	l.lines = lines
	a.mu.Unlock()
}

// clear erases the drawn block; a.mu is held.
func (l *liveDisplay) clear() {
	if l.drawn > 0 {
		fmt.Fprintf(l.a.out, "\x1b[%dA\x1b[J", l.drawn)
		l.drawn = 0
	}
}

func (l *liveDisplay) draw() {
	if len(l.lines) == 0 {
		return
	}
	fmt.Fprintln(l.a.out, strings.Join(l.lines, "\n"))
	l.drawn = len(l.lines)
}

func (l *liveDisplay) stop() {
	close(l.quit)
	<-l.done
	l.a.mu.Lock()
	l.clear()
	l.a.mu.Unlock()
}
