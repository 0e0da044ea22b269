package gpu

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// Pool hands GPUs to nodes: free now (no foreign compute processes,
// little memory used, nobody's lease), leased machine-wide through lock
// files so that two applies never share a device, and pinned through
// CUDA_VISIBLE_DEVICES.
type Pool struct {
	Inv    Inventory
	Leases *LeaseDir
	// ByUUID pins devices by UUID instead of index.
	ByUUID bool
	// MaxUsedMiB is the memory threshold above which a device is busy.
	MaxUsedMiB uint64
	// SampleInterval is how often a node's memory is sampled (0:
	// DefaultSampleInterval).
	SampleInterval time.Duration

	mu       sync.Mutex
	mine     map[int]bool // devices leased by this process now
	released map[int]time.Time
	devs     []Device
	total    int
	// simMemDir is where processes on simulated devices report their
	// memory (EnvSimMemory); "" for real devices.
	simMemDir string
}

// NewPool opens the machine's inventory (CAIRN_GPUS=sim:N for a
// simulated one) and the machine-wide lease folder.
func NewPool(env func(string) string) (*Pool, error) {
	inv, err := Open(env)
	if err != nil {
		return nil, err
	}
	p, err := NewPoolFor(inv, LeaseDirPath(env, inv))
	if err != nil {
		return nil, err
	}
	if env("CAIRN_GPU_BY_UUID") == "1" {
		p.ByUUID = true
	}
	p.SampleInterval = ParseSampleInterval(env("CAIRN_SAMPLE_INTERVAL"))
	return p, nil
}

// NewPoolFor is a pool of inv's devices, leased in leaseDir: a cluster
// executor's GPUs, say, which are the cluster's and not this machine's.
func NewPoolFor(inv Inventory, leaseDir string) (*Pool, error) {
	ld, err := OpenLeaseDir(leaseDir)
	if err != nil {
		return nil, err
	}
	p := &Pool{Inv: inv, Leases: ld, mine: map[int]bool{}, released: map[int]time.Time{}}
	if si, ok := inv.(*simInventory); ok {
		// Simulated jobs report the device memory they use here.
		si.memDir = filepath.Join(ld.path, "memory")
		p.simMemDir = si.memDir
	}
	devs, err := inv.Devices(context.Background())
	if err == nil {
		p.devs = devs
		p.total = len(devs)
	}
	return p, nil
}

// Devices are the devices offered, as last read (at NewPool, or by
// Status).
func (p *Pool) Devices() []Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Device(nil), p.devs...)
}

// Total is the number of devices offered.
func (p *Pool) Total() int { return p.total }

// Simulated reports whether the devices are simulated.
func (p *Pool) Simulated() bool { return p.Inv.Source() == SourceSimulated }

// Placed is an Inventory whose devices are not this machine's: a
// cluster's, which a job gets from its scheduler. Where names them for
// people ("the cluster").
type Placed interface {
	Where() string
}

// Remote reports whether the devices are elsewhere than on this machine
// (a Placed inventory's).
func (p *Pool) Remote() bool {
	_, ok := p.Inv.(Placed)
	return ok
}

// Describe says what devices there are, in words, and where.
func (p *Pool) Describe() string {
	where := "this machine"
	if pl, ok := p.Inv.(Placed); ok {
		where = pl.Where()
	}
	if p.total == 0 {
		return where + " has no GPU: " + p.Inv.Note()
	}
	return fmt.Sprintf("%s has %d (%s)", where, p.total, p.Inv.Note())
}

// Status classifies every device now.
func (p *Pool) Status(ctx context.Context) ([]Status, error) {
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
	return Classify(devs, FreePolicy{MaxUsedMiB: p.MaxUsedMiB, Released: rel, Leased: holders, Now: time.Now()}), nil
}

// FreeIndices lists the devices free now, in index order.
func (p *Pool) FreeIndices(ctx context.Context) []int {
	st, err := p.Status(ctx)
	if err != nil {
		return nil
	}
	return FreeIndices(st)
}

// Acquire leases n free devices (lowest indices first); nil without error
// when not enough are free now.
func (p *Pool) Acquire(ctx context.Context, n int, h Holder) (*Lease, error) {
	free := p.FreeIndices(ctx)
	if len(free) < n {
		return nil, nil
	}
	return p.AcquireExact(free[:n], h)
}

// AcquireExact leases exactly these devices, or returns nil when one is
// taken.
func (p *Pool) AcquireExact(devs []int, h Holder) (*Lease, error) {
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
	if err := Recheck(context.Background(), p.Inv, l.Devices, FreePolicy{MaxUsedMiB: p.MaxUsedMiB, Released: rel, Now: time.Now()}); err != nil {
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

// Release ends a node's lease (Lease.End) once its process has ended:
// a process it left behind with the lease's descriptors no longer holds
// the devices. It gives them a grace period for their memory to drain
// before they count as busy.
func (p *Pool) Release(l *Lease) {
	_ = l.End()
	p.mu.Lock()
	for _, d := range l.Devices {
		delete(p.mine, d)
		p.released[d] = time.Now()
	}
	p.mu.Unlock()
}

// ChildEnv is the environment that pins a node to its devices.
func (p *Pool) ChildEnv(devs []int) []string {
	p.mu.Lock()
	all := p.devs
	p.mu.Unlock()
	env := ChildEnv(all, devs, p.ByUUID)
	if p.simMemDir != "" {
		env = append(env, EnvSimMemory+"="+p.simMemDir)
	}
	return env
}

// Sampler returns the memory sampler for a node on devs.
func (p *Pool) Sampler(devs []int) func(pid int) func() Peaks {
	return func(pid int) func() Peaks {
		var inv Inventory
		if len(devs) > 0 {
			inv = p.Inv
		}
		s := StartSampler(context.Background(), pid, cmp.Or(p.SampleInterval, DefaultSampleInterval), inv, devs)
		return s.Stop
	}
}

// Holders reads who holds which device.
func (p *Pool) Holders() map[int]Holder {
	h, _ := p.Leases.Holders()
	return h
}
