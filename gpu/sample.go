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
}

// WithRusage raises RSSMiB to the largest resident set the kernel recorded for the waited
// process (its rusage maximum), which catches a peak shorter than the sampling interval.
func (p Peaks) WithRusage(ps *os.ProcessState) Peaks {
	if ps == nil {
		return p
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
		p.RSSMiB = max(p.RSSMiB, float64(ru.Maxrss)/1024) // Linux reports KiB
	}
	return p
}

// Sampler follows one node's process tree until stopped.
type Sampler struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	peaks Peaks
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
	if inv != nil {
		for _, dev := range devices {
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
			if mine > 0 {
				gpu += mine
			} else {
				gpu += used
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peaks.Samples++
	s.peaks.RSSMiB = max(s.peaks.RSSMiB, float64(rss)/(1<<20))
	s.peaks.GPUMiB = max(s.peaks.GPUMiB, float64(gpu))
}

// Peaks returns the maxima so far, while sampling goes on.
func (s *Sampler) Peaks() Peaks {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peaks
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
