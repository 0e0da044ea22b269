package gpu

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProcStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
	tests := []struct {
		name string
		line string
		want procStat
		ok   bool
	}{
		{"plain", "1234 (python3) S 1000 1234 1000 34816 1234 4194560 1 2 3 4 5 6 7 8 20 0 9 0 100 2000000 51200" + tail,
			procStat{pid: 1234, ppid: 1000, pgrp: 1234, rssPages: 51200}, true},
		{"name with spaces and parens", "77 (a) b (c)) R 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 999" + tail,
			procStat{pid: 77, ppid: 5, pgrp: 6, rssPages: 999}, true},
		{"zombie without rss", "88 (x) Z 1 88 88 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0" + tail,
			procStat{pid: 88, ppid: 1, pgrp: 88}, true},
		{"truncated", "99 (x) S 1 2 3", procStat{}, false},
		{"no name", "99 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23", procStat{}, false},
		{"bad pid", "abc (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23", procStat{}, false},
		{"empty", "", procStat{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseProcStat([]byte(tc.line))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTreeRSSOfSelf(t *testing.T) {
	rss, err := TreeRSS(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rss, selfRSS()/2, "the tree includes this process")
}

func TestTreeRSSMissingProcess(t *testing.T) {
	// Find a pid that is not in use.
	pid := 1 << 22
	for ; pid > 0; pid-- {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
			break
		}
	}
	_, err := TreeRSS(pid)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// startAlloc starts a helper that touches mib MiB and returns it with its baseline RSS.
func startAlloc(t *testing.T, mode string, mib int, env ...string) (*helper, uint64) {
	t.Helper()
	h := startHelper(t, mode, nil, append(env, "CAIRN_GPU_TEST_MIB="+strconv.Itoa(mib))...)
	if mode != "alloc" {
		return h, 0
	}
	var base uint64
	_, err := fmt.Sscanf(h.line(t), "baseline %d", &base)
	require.NoError(t, err)
	return h, base
}

func TestTreeRSSCountsDescendants(t *testing.T) {
	const mib = 64
	h, _ := startAlloc(t, "tree", mib)
	require.Equal(t, "ready", h.line(t))
	rss, err := TreeRSS(h.cmd.Process.Pid)
	require.NoError(t, err)
	// Two children each hold mib MiB, on top of three Go runtimes.
	assert.GreaterOrEqual(t, rss, uint64(2*mib)<<20)
	require.NoError(t, h.stdin.Close())
	require.NoError(t, h.cmd.Wait())
}

func TestTreeRSSCountsProcessGroupAfterParentExits(t *testing.T) {
	const mib = 64
	h, _ := startAlloc(t, "orphan", mib)
	var orphan int
	_, err := fmt.Sscanf(h.line(t), "ready %d", &orphan)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(orphan, syscall.SIGKILL) })
	require.NoError(t, h.cmd.Wait()) // the group's leader is gone; its child lives on in the group
	rss, err := TreeRSS(h.cmd.Process.Pid)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rss, uint64(mib)<<20)
}

// fakeInventory serves fixed device memory figures to the sampler.
type fakeInventory struct {
	used  map[int]uint64
	procs map[int][]Process
}

func (f *fakeInventory) Source() string                            { return "fake" }
func (f *fakeInventory) Note() string                              { return "fake" }
func (f *fakeInventory) Close() error                              { return nil }
func (f *fakeInventory) Devices(context.Context) ([]Device, error) { return nil, nil }
func (f *fakeInventory) DeviceMemory(_ context.Context, i int) (uint64, []Process, error) {
	u, ok := f.used[i]
	if !ok {
		return 0, nil, ErrNoDevice
	}
	return u, f.procs[i], nil
}

func TestSamplerPeakRSSOfAllocatingChild(t *testing.T) {
	const mib = 200
	h, base := startAlloc(t, "alloc", mib)
	pid := h.cmd.Process.Pid
	inv := &fakeInventory{
		used: map[int]uint64{0: 9000, 1: 700},
		procs: map[int][]Process{
			0: {{PID: pid, UsedMiB: 300}, {PID: 1 << 30, UsedMiB: 5000}}, // ours, and a stranger's
		},
	}
	s := StartSampler(context.Background(), pid, 20*time.Millisecond, inv, []int{0, 1, 9})
	require.Equal(t, "ready", h.line(t))
	// Let the sampler see the child holding its memory a few times.
	ready := s.Peaks().Samples
	deadline := time.Now().Add(time.Minute)
	for s.Peaks().Samples < ready+3 {
		require.True(t, time.Now().Before(deadline), "sampler stalled")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, h.stdin.Close())
	require.NoError(t, h.cmd.Wait())
	p := s.Stop()

	want := float64(base)/(1<<20) + mib
	t.Logf("peak RSS %.1f MiB (baseline %.1f + %d MiB), %d samples", p.RSSMiB, float64(base)/(1<<20), mib, p.Samples)
	assert.InDelta(t, want, p.RSSMiB, 0.1*mib, "peak RSS %.1f MiB, baseline %.1f MiB + %d MiB", p.RSSMiB, float64(base)/(1<<20), mib)
	// Device 0 reports our pid: its figure counts, the stranger's does not. Device 1 reports
	// no processes: its whole used memory is ours. Device 9 does not exist.
	assert.Equal(t, 300.0+700.0, p.GPUMiB)
	assert.GreaterOrEqual(t, p.Samples, ready+3)
	assert.Equal(t, p, s.Stop(), "Stop again returns the same peaks")
	// The kernel's own maximum agrees, and as a floor it can only raise the peak.
	floor := p.WithRusage(h.cmd.ProcessState, 0).RSSMiB
	assert.GreaterOrEqual(t, floor, p.RSSMiB)
	assert.InDelta(t, want, floor, 0.1*mib)
}

func TestPeaksWithRusageRaisesShortPeak(t *testing.T) {
	const mib = 100
	h, _ := startAlloc(t, "alloc", mib)
	require.Equal(t, "ready", h.line(t))
	require.NoError(t, h.stdin.Close())
	require.NoError(t, h.cmd.Wait())
	// Sampled nothing (as if the peak fell between samples): the kernel's maximum counts.
	p := Peaks{}.WithRusage(h.cmd.ProcessState, SelfMaxRSSKiB())
	assert.GreaterOrEqual(t, p.RSSMiB, float64(mib))
	assert.Equal(t, Peaks{RSSMiB: 5}, Peaks{RSSMiB: 5}.WithRusage(nil, 0))
}

// A child's rusage maximum at or below its parent's may be the parent's
// (Linux counts the memory a vfork child shared until exec): it is not
// taken for the child's. `true` never holds what this test process does.
func TestPeaksWithRusageIgnoresTheParentsMaximum(t *testing.T) {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Start())
	parent := SelfMaxRSSKiB()
	require.NoError(t, cmd.Wait())
	require.Positive(t, parent)
	assert.Equal(t, Peaks{}, Peaks{}.WithRusage(cmd.ProcessState, parent))
	assert.Equal(t, Peaks{RSSMiB: 2}, Peaks{RSSMiB: 2}.WithRusage(cmd.ProcessState, parent), "the samples stand")
}

func TestSamplerStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := StartSampler(ctx, os.Getpid(), time.Millisecond, nil, nil)
	cancel()
	p := s.Stop()
	assert.Positive(t, p.Samples, "the first sample is taken at start")
	assert.Positive(t, p.RSSMiB)
	assert.Zero(t, p.GPUMiB)
}

func BenchmarkTreeRSS(b *testing.B) {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			n++
		}
	}
	for b.Loop() {
		if _, err := TreeRSS(os.Getpid()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "procs")
}

func BenchmarkParseProcStat(b *testing.B) {
	line := []byte("1234 (python3 -m vllm) S 1000 1234 1000 34816 1234 4194560 1 2 3 4 5 6 7 8 20 0 9 0 100 2000000 51200" + strings.Repeat(" 0", 28))
	for b.Loop() {
		if _, ok := parseProcStat(line); !ok {
			b.Fatal("parse failed")
		}
	}
}

// CAIRN_SAMPLE_INTERVAL's value, which the command line reads, is a Go
// duration above 0; anything else is the default. A pool made from a
// lookup samples at the interval the lookup gives.
func TestParseSampleInterval(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"": DefaultSampleInterval, "250ms": 250 * time.Millisecond, "2s": 2 * time.Second,
		"0s": DefaultSampleInterval, "-1s": DefaultSampleInterval, "fast": DefaultSampleInterval,
	} {
		assert.Equal(t, want, ParseSampleInterval(s), "%q", s)
	}
	p, err := NewPool(func(k string) string {
		return map[string]string{"CAIRN_GPUS": "none", "CAIRN_LEASE_DIR": t.TempDir(), "CAIRN_SAMPLE_INTERVAL": "30ms"}[k]
	})
	require.NoError(t, err)
	assert.Equal(t, 30*time.Millisecond, p.SampleInterval)
}

// A device's memory series keeps its change points, and stays bounded
// however long a process runs: buckets merge two into one, each keeping
// the higher sample, so the peak survives.
func TestMemorySeriesIsBoundedAndKeepsThePeak(t *testing.T) {
	s := &series{width: 100 * time.Millisecond}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for ms := 0; ms < 1000; ms += 100 {
		s.add(at(ms), 1000)
	}
	for ms := 1000; ms < 2000; ms += 100 {
		s.add(at(ms), 3000)
	}
	for ms := 2000; ms <= 3000; ms += 100 {
		s.add(at(ms), 500)
	}
	m, ok := s.points(2)
	require.True(t, ok)
	assert.Equal(t, 2, m.Device)
	assert.Equal(t, t0, m.Start)
	assert.Equal(t, []int64{0, 1000, 2000, 3000}, m.T)
	assert.Equal(t, []float64{1000, 3000, 500, 500}, m.MiB)

	// A day of samples, one 100 ms spike of 7000 MiB in it.
	long := &series{width: 100 * time.Millisecond}
	for ms := 0; ms <= 24*3600*1000; ms += 100 {
		v := float64(1000 + ms/1000%7)
		if ms == 12*3600*1000+300 {
			v = 7000
		}
		long.add(at(ms), v)
	}
	assert.LessOrEqual(t, len(long.vals), SeriesPoints)
	lm, _ := long.points(0)
	assert.LessOrEqual(t, len(lm.MiB), SeriesPoints+1)
	assert.Contains(t, lm.MiB, 7000.0, "the spike is kept")
	assert.Greater(t, lm.T[len(lm.T)-1], int64(23*3600*1000), "the series reaches the last sample's bucket")
}
