package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/process"
)

// ParseSampleInterval is the memory sampling interval a value of
// CAIRN_SAMPLE_INTERVAL says (a Go duration): DefaultSampleInterval when
// it is empty or not a duration above 0. The command line reads the
// variable and passes the interval down (engine.ApplyOptions,
// Pool.SampleInterval).
func ParseSampleInterval(s string) time.Duration {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	return DefaultSampleInterval
}

// DefaultSampleInterval is how often a Sampler looks at a node's processes.
const DefaultSampleInterval = 100 * time.Millisecond

// Peaks are the highest memory figures seen for a node's process tree: host RSS summed over
// the tree, and GPU memory on its leased devices, in MiB. Samples counts the samples in
// which the tree was found.
type Peaks struct {
	RSSMiB  float64
	GPUMiB  float64
	Samples int
	// GPUMemory is the use on each leased device over time (a bounded
	// series, see SeriesPoints), for the run report.
	GPUMemory []process.GPUMemory
}

// WithRusage raises RSSMiB to the largest resident set the kernel recorded for the waited
// process (its rusage maximum), which catches a peak shorter than the sampling interval.
//
// parentKiB is the starting process's own rusage maximum once the child had started
// (SelfMaxRSSKiB after Start). A child started by vfork (as Go starts processes) shares its
// parent's memory until it executes its program, and Linux then counts the parent's high-water
// mark in the child's maximum: a maximum at or below the parent's may be the parent's, and is
// not taken (the samples stand). One above it is the child's own.
func (p Peaks) WithRusage(ps *os.ProcessState, parentKiB int64) Peaks {
	if ps == nil {
		return p
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil && int64(ru.Maxrss) > parentKiB {
		p.RSSMiB = max(p.RSSMiB, float64(ru.Maxrss)/1024) // Linux reports KiB
	}
	return p
}

// SelfMaxRSSKiB is this process's own rusage maximum resident set, in KiB (0 where it
// cannot be read).
func SelfMaxRSSKiB() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Maxrss)
}

// Sampler follows one node's process tree until stopped.
type Sampler struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	peaks   Peaks
	devices []int
	series  []*series // per leased device, in devices' order
}

// StartSampler samples the process tree rooted at pid (its descendants, and every process in
// its process group, which catches descendants whose parent has exited) every interval until
// ctx is done or Stop is called. Host memory is the tree's summed RSS from /proc. GPU memory
// is read for the leased devices through inv: where NVML reports per-process figures for
// pids in the tree their sum is the node's, otherwise the device's whole used memory is
// (a lease is exclusive, so whatever is on the device is the node's). inv may be nil for a
// node without GPUs. interval <= 0 means DefaultSampleInterval.
func StartSampler(ctx context.Context, pid int, interval time.Duration, inv Inventory, devices []int) *Sampler {
	if interval <= 0 {
		interval = DefaultSampleInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Sampler{cancel: cancel, done: make(chan struct{})}
	devices = append([]int(nil), devices...)
	s.devices = devices
	if inv != nil {
		for range devices {
			s.series = append(s.series, &series{width: interval})
		}
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample(ctx, pid, inv, devices)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *Sampler) sample(ctx context.Context, pid int, inv Inventory, devices []int) {
	pids, rss, err := scanTree(pid)
	if err != nil {
		return
	}
	var gpu uint64
	now := time.Now()
	per := make([]float64, len(devices))
	for i := range per {
		per[i] = -1
	}
	if inv != nil {
		for i, dev := range devices {
			used, procs, err := inv.DeviceMemory(ctx, dev)
			if err != nil {
				continue
			}
			var mine uint64
			for _, p := range procs {
				if pids[p.PID] {
					mine += p.UsedMiB
				}
			}
			if mine == 0 {
				mine = used
			}
			gpu += mine
			per[i] = float64(mine)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, v := range per {
		if v >= 0 && i < len(s.series) {
			s.series[i].add(now, v)
		}
	}
	s.peaks.Samples++
	s.peaks.RSSMiB = max(s.peaks.RSSMiB, float64(rss)/(1<<20))
	s.peaks.GPUMiB = max(s.peaks.GPUMiB, float64(gpu))
}

// Peaks returns the maxima so far, while sampling goes on, with each
// device's series.
func (s *Sampler) Peaks() Peaks {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peaks
	p.GPUMemory = nil
	for i, sr := range s.series {
		if m, ok := sr.points(s.devices[i]); ok {
			p.GPUMemory = append(p.GPUMemory, m)
		}
	}
	return p
}

// SeriesPoints bounds the buckets of a device's memory series: when a
// process runs longer than SeriesPoints sampling intervals, neighbouring
// buckets merge two into one (each keeping the higher sample), so a
// series of a week's run is as small as one of a minute's, and the
// event log stays small.
const SeriesPoints = 256

// series is one device's samples, in buckets of width from start: each
// bucket the highest sample in it (-1: none).
type series struct {
	start time.Time
	width time.Duration
	vals  []float64
}

func (s *series) add(t time.Time, v float64) {
	if s.start.IsZero() {
		s.start = t
	}
	i := int(t.Sub(s.start) / s.width)
	for i >= SeriesPoints {
		merged := make([]float64, (len(s.vals)+1)/2)
		for k := range merged {
			merged[k] = s.vals[2*k]
			if 2*k+1 < len(s.vals) {
				merged[k] = max(merged[k], s.vals[2*k+1])
			}
		}
		s.vals, s.width = merged, 2*s.width
		i = int(t.Sub(s.start) / s.width)
	}
	for len(s.vals) <= i {
		s.vals = append(s.vals, -1)
	}
	s.vals[i] = max(s.vals[i], v)
}

// points are the series' change points: a bucket whose value differs from
// the one before, and the last bucket.
func (s *series) points(dev int) (process.GPUMemory, bool) {
	m := process.GPUMemory{Device: dev, Start: s.start}
	last := -1
	for i, v := range s.vals {
		if v < 0 {
			continue
		}
		if len(m.MiB) == 0 || v != m.MiB[len(m.MiB)-1] {
			m.T = append(m.T, (time.Duration(i) * s.width).Milliseconds())
			m.MiB = append(m.MiB, v)
		}
		last = i
	}
	if len(m.MiB) == 0 {
		return m, false
	}
	if t := (time.Duration(last) * s.width).Milliseconds(); t > m.T[len(m.T)-1] {
		m.T = append(m.T, t)
		m.MiB = append(m.MiB, m.MiB[len(m.MiB)-1])
	}
	return m, true
}

// Stop ends sampling and returns the maxima. Calling it again returns them again.
func (s *Sampler) Stop() Peaks {
	s.cancel()
	<-s.done
	return s.Peaks()
}

// procStat is what the sampler needs from /proc/<pid>/stat.
type procStat struct {
	pid, ppid, pgrp int
	rssPages        uint64
}

// scanTree reads every /proc/<pid>/stat and returns the pids of the tree rooted at root
// (descendants and process-group members) with their summed RSS in bytes.
func scanTree(root int) (map[int]bool, uint64, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, 0, fmt.Errorf("gpu: read /proc: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("gpu: read /proc: %w", err)
	}
	stats := make([]procStat, 0, len(names))
	var buf []byte
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		st, ok := readProcStat("/proc/"+name+"/stat", &buf)
		if ok {
			stats = append(stats, st)
		}
	}
	children := make(map[int][]int, len(stats))
	rss := make(map[int]uint64, len(stats))
	in := map[int]bool{}
	var queue []int
	for _, st := range stats {
		children[st.ppid] = append(children[st.ppid], st.pid)
		rss[st.pid] = st.rssPages
		if st.pid == root || st.pgrp == root {
			in[st.pid] = true
			queue = append(queue, st.pid)
		}
	}
	if len(in) == 0 {
		return nil, 0, fmt.Errorf("gpu: process %d: %w", root, fs.ErrNotExist)
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !in[c] {
				in[c] = true
				queue = append(queue, c)
			}
		}
	}
	var pages uint64
	for p := range in {
		pages += rss[p]
	}
	return in, pages * uint64(os.Getpagesize()), nil
}

// readProcStat parses one /proc/<pid>/stat; false when the process is gone or the line odd.
// It reads with plain system calls into a reused buffer: the sampler does this for every
// process on the machine, every interval.
func readProcStat(path string, buf *[]byte) (procStat, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	defer unix.Close(fd)
	if cap(*buf) < 4096 {
		*buf = make([]byte, 0, 4096)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || m == 0 {
			break
		}
		n += m
	}
	return parseProcStat(b[:n])
}

// parseProcStat reads pid, ppid, pgrp and rss out of a stat line. The command name sits in
// parentheses and may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func parseProcStat(b []byte) (procStat, bool) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return procStat{}, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return procStat{}, false
	}
	// Fields after the name: 0 state, 1 ppid, 2 pgrp, ..., 21 rss (stat fields 3..24).
	var fields [22][]byte
	n := 0
	for rest := b[end+1:]; n < len(fields); n++ {
		rest = bytes.TrimLeft(rest, " \n")
		if len(rest) == 0 {
			break
		}
		i := bytes.IndexAny(rest, " \n")
		if i < 0 {
			i = len(rest)
		}
		fields[n], rest = rest[:i], rest[i:]
	}
	if n < len(fields) {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	pgrp, err2 := strconv.Atoi(string(fields[2]))
	rss, err3 := strconv.ParseInt(string(fields[21]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, rssPages: uint64(max(rss, 0))}, true
}
