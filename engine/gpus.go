package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cairn-run/cairn/gpu"
)

// GPUPool hands GPUs to nodes: free now (no foreign compute processes,
// little memory used, nobody's lease), leased machine-wide through lock
// files so that two applies never share a device, and pinned through
// CUDA_VISIBLE_DEVICES.
type GPUPool struct {
	Inv    gpu.Inventory
	Leases *gpu.LeaseDir
	// ByUUID pins devices by UUID instead of index.
	ByUUID bool
	// MaxUsedMiB is the memory threshold above which a device is busy.
	MaxUsedMiB uint64

	mu       sync.Mutex
	mine     map[int]bool // devices leased by this process now
	released map[int]time.Time
	devs     []gpu.Device
	total    int
}

// NewGPUPool opens the machine's inventory (CAIRN_GPUS=sim:N for a
// simulated one) and the machine-wide lease folder.
func NewGPUPool(env func(string) string) (*GPUPool, error) {
	inv, err := gpu.Open(env)
	if err != nil {
		return nil, err
	}
	ld, err := gpu.OpenLeaseDir(gpu.LeaseDirPath(env, inv))
	if err != nil {
		return nil, err
	}
	p := &GPUPool{Inv: inv, Leases: ld, mine: map[int]bool{}, released: map[int]time.Time{}}
	if env("CAIRN_GPU_BY_UUID") == "1" {
		p.ByUUID = true
	}
	devs, err := inv.Devices(context.Background())
	if err == nil {
		p.devs = devs
		p.total = len(devs)
	}
	return p, nil
}

// Total is the number of devices offered.
func (p *GPUPool) Total() int { return p.total }

// Simulated reports whether the devices are simulated.
func (p *GPUPool) Simulated() bool { return p.Inv.Source() == gpu.SourceSimulated }

// Describe says what devices there are, in words.
func (p *GPUPool) Describe() string {
	if p.total == 0 {
		return "this machine has no GPU: " + p.Inv.Note()
	}
	return fmt.Sprintf("this machine has %d (%s)", p.total, p.Inv.Note())
}

// Status classifies every device now.
func (p *GPUPool) Status(ctx context.Context) ([]gpu.Status, error) {
	devs, err := p.Inv.Devices(ctx)
	if err != nil {
		return nil, err
	}
	holders, _ := p.Leases.Holders()
	p.mu.Lock()
	p.devs = devs
	rel := map[int]time.Time{}
	for k, v := range p.released {
		rel[k] = v
	}
	p.mu.Unlock()
	return gpu.Classify(devs, gpu.FreePolicy{MaxUsedMiB: p.MaxUsedMiB, Released: rel, Leased: holders, Now: time.Now()}), nil
}

// FreeIndices lists the devices free now, in index order.
func (p *GPUPool) FreeIndices(ctx context.Context) []int {
	st, err := p.Status(ctx)
	if err != nil {
		return nil
	}
	return gpu.FreeIndices(st)
}

// Acquire leases n free devices (lowest indices first); nil without error
// when not enough are free now.
func (p *GPUPool) Acquire(ctx context.Context, n int, h gpu.Holder) (*gpu.Lease, error) {
	free := p.FreeIndices(ctx)
	if len(free) < n {
		return nil, nil
	}
	return p.AcquireExact(free[:n], h)
}

// AcquireExact leases exactly these devices, or returns nil when one is
// taken.
func (p *GPUPool) AcquireExact(devs []int, h gpu.Holder) (*gpu.Lease, error) {
	l, err := p.Leases.TryAcquire(devs, h)
	if err != nil {
		return nil, nil
	}
	// Free means free now: read the devices again with the lease held,
	// right before the node starts on them.
	p.mu.Lock()
	rel := map[int]time.Time{}
	for k, v := range p.released {
		rel[k] = v
	}
	p.mu.Unlock()
	if err := gpu.Recheck(context.Background(), p.Inv, l.Devices, gpu.FreePolicy{MaxUsedMiB: p.MaxUsedMiB, Released: rel, Now: time.Now()}); err != nil {
		_ = l.Release()
		return nil, nil
	}
	p.mu.Lock()
	for _, d := range l.Devices {
		p.mine[d] = true
	}
	p.mu.Unlock()
	return l, nil
}

// Release ends this process's hold on a lease (the child, if alive,
// still holds it) and gives the devices a grace period for their memory
// to drain before they count as busy.
func (p *GPUPool) Release(l *gpu.Lease) {
	_ = l.Release()
	p.mu.Lock()
	for _, d := range l.Devices {
		delete(p.mine, d)
		p.released[d] = time.Now()
	}
	p.mu.Unlock()
}

// ChildEnv is the environment that pins a node to its devices.
func (p *GPUPool) ChildEnv(devs []int) []string {
	p.mu.Lock()
	all := p.devs
	p.mu.Unlock()
	return gpu.ChildEnv(all, devs, p.ByUUID)
}

// Sampler returns the memory sampler for a node on devs.
func (p *GPUPool) Sampler(devs []int) func(pid int) func() gpu.Peaks {
	return func(pid int) func() gpu.Peaks {
		var inv gpu.Inventory
		if len(devs) > 0 {
			inv = p.Inv
		}
		s := gpu.StartSampler(context.Background(), pid, SampleInterval(), inv, devs)
		return s.Stop
	}
}

// Holders reads who holds which device.
func (p *GPUPool) Holders() map[int]gpu.Holder {
	h, _ := p.Leases.Holders()
	return h
}
