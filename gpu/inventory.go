package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Errors callers may test for with errors.Is.
var (
	// ErrNoDevice: the index names no device this inventory offers.
	ErrNoDevice = errors.New("gpu: no such device")
	// ErrNVML: an NVML call failed; the wrapping error names the call and NVML's code.
	ErrNVML = errors.New("gpu: nvml call failed")
)

// Inventory sources, as returned by Inventory.Source.
const (
	SourceNVML      = "nvml"
	SourceSimulated = "simulated"
	SourceNone      = "none"
)

// Environment variables Open reads.
const (
	// EnvGPUs selects the inventory: "sim:N[,busy=I,J][,mem=SIZE]" for a simulated one,
	// "none" for no GPUs at all, "nvml" (or unset) for the real devices.
	EnvGPUs = "CAIRN_GPUS"
	// EnvNVMLLibrary overrides the path of the NVML library (default libnvidia-ml.so.1).
	EnvNVMLLibrary = "CAIRN_NVML_LIBRARY"
	// EnvVisible is CUDA's own restriction; when set on cairn, only those devices are offered.
	EnvVisible = "CUDA_VISIBLE_DEVICES"
)

// Process is a compute process NVML reports on a device.
type Process struct {
	PID     int
	UsedMiB uint64 // 0 when NVML cannot say (for instance inside some containers)
}

// Device is one GPU as cairn sees it at one moment. Index is the device's NVML index, which
// is the index CUDA uses when CUDA_DEVICE_ORDER=PCI_BUS_ID (see ChildEnv).
type Device struct {
	Index       int
	UUID, Name  string
	MemTotalMiB uint64
	MemUsedMiB  uint64
	Processes   []Process
	Simulated   bool
	// Problem is set when the device could not be queried (a lost GPU, a permission error);
	// such a device is never offered.
	Problem string
}

// Inventory lists the GPUs cairn may hand to nodes. Implementations are safe for concurrent
// use: the scheduler and every node's sampler query the same inventory.
type Inventory interface {
	// Source is SourceNVML, SourceSimulated or SourceNone.
	Source() string
	// Note is one line for humans on where the devices come from, or why there are none.
	Note() string
	// Devices lists the devices offered, in index order, with their current memory and processes.
	Devices(ctx context.Context) ([]Device, error)
	// DeviceMemory reads one device's used memory and compute processes, for sampling.
	DeviceMemory(ctx context.Context, index int) (usedMiB uint64, procs []Process, err error)
	// Close releases the library; the inventory is unusable afterwards.
	Close() error
}

// Open picks the inventory for this process: a simulated one when CAIRN_GPUS says so, else
// NVML when cairn was built with cgo and the driver library loads, else an empty inventory
// whose Note says why. It fails only on a CAIRN_GPUS value it cannot read; a machine without
// a driver, or with a driver NVML cannot initialise, gets the empty inventory.
//
// env looks up environment variables (os.Getenv; nil means os.Getenv). CUDA_VISIBLE_DEVICES
// restricts the NVML devices offered (see Restrict); an empty value counts as unset, since
// a Getenv lookup cannot tell the two apart: hide every GPU from cairn with
// CUDA_VISIBLE_DEVICES=-1 or CAIRN_GPUS=none.
func Open(env func(string) string) (Inventory, error) {
	return open(env, openNVML)
}

// open is Open with the NVML loader given, so tests can stand a mock in for the driver.
func open(env func(string) string, loadNVML func(env func(string) string) Inventory) (Inventory, error) {
	if env == nil {
		env = os.Getenv
	}
	spec := strings.TrimSpace(env(EnvGPUs))
	switch {
	case strings.HasPrefix(spec, "sim:") || spec == "sim":
		s, err := ParseSimSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvGPUs, err)
		}
		return NewSimulated(s), nil
	case spec == "none":
		return NewNone("GPUs disabled by CAIRN_GPUS=none: 0 GPUs"), nil
	case spec == "" || spec == "nvml":
	default:
		return nil, fmt.Errorf("gpu: %s=%q: want sim:N[,busy=I,J][,mem=SIZE], none or nvml", EnvGPUs, spec)
	}
	inv := loadNVML(env)
	if v := strings.TrimSpace(env(EnvVisible)); v != "" && inv.Source() == SourceNVML {
		inv = Restrict(inv, v)
	}
	return inv, nil
}

// noneInventory offers no devices and says why.
type noneInventory struct{ note string }

// NewNone returns an inventory with no devices; note tells people why.
func NewNone(note string) Inventory { return noneInventory{note: note} }

func (n noneInventory) Source() string { return SourceNone }
func (n noneInventory) Note() string   { return n.note }
func (n noneInventory) Close() error   { return nil }

func (n noneInventory) Devices(ctx context.Context) ([]Device, error) {
	return nil, ctx.Err()
}

func (n noneInventory) DeviceMemory(_ context.Context, index int) (uint64, []Process, error) {
	return 0, nil, fmt.Errorf("gpu: device %d: %w (%s)", index, ErrNoDevice, n.note)
}

// SimSpec describes a simulated machine: Count devices of MemMiB each, the Busy ones
// occupied by a simulated foreign process.
type SimSpec struct {
	Count  int
	Busy   []int
	MemMiB uint64
	spec   string // as written, for notes
}

// DefaultSimMemMiB is the memory of a simulated device when the spec does not say (80 GiB).
const DefaultSimMemMiB = 80 * 1024

const simSpecHelp = "want sim:N, sim:N,busy=I,J or sim:N,mem=SIZE (SIZE like 80G or 40960M)"

// ParseSimSpec reads a simulated-machine spec: "sim:4", "sim:4,busy=0,2", "sim:2,mem=80G".
// Sizes are binary: 80G, 80GB and 80GiB are all 80 GiB; a bare number is MiB.
func ParseSimSpec(s string) (SimSpec, error) {
	bad := func(format string, args ...any) (SimSpec, error) {
		return SimSpec{}, fmt.Errorf("gpu: simulated GPUs %q: %s; %s", s, fmt.Sprintf(format, args...), simSpecHelp)
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "sim:")
	if !ok {
		return bad("missing the sim: prefix")
	}
	toks := strings.Split(rest, ",")
	for i := range toks {
		toks[i] = strings.TrimSpace(toks[i])
	}
	n, err := strconv.Atoi(toks[0])
	if err != nil || n < 0 {
		return bad("device count %q is not a whole number", toks[0])
	}
	if n > 1024 {
		return bad("device count %d is more than 1024", n)
	}
	spec := SimSpec{Count: n, MemMiB: DefaultSimMemMiB, spec: strings.TrimSpace(s)}
	key := ""
	seen := map[string]bool{}
	for _, tok := range toks[1:] {
		val := tok
		if k, v, ok := strings.Cut(tok, "="); ok {
			key, val = strings.TrimSpace(k), strings.TrimSpace(v)
			if seen[key] {
				return bad("%s given twice", key)
			}
			seen[key] = true
		} else if key != "busy" {
			return bad("%q is not key=value", tok)
		}
		switch key {
		case "busy":
			i, err := strconv.Atoi(val)
			if err != nil || i < 0 {
				return bad("busy device %q is not a device index", val)
			}
			if i >= n {
				return bad("busy device %d does not exist (devices are 0..%d)", i, n-1)
			}
			if slices.Contains(spec.Busy, i) {
				return bad("busy device %d listed twice", i)
			}
			spec.Busy = append(spec.Busy, i)
		case "mem":
			mib, err := parseMiB(val)
			if err != nil {
				return bad("mem: %v", err)
			}
			spec.MemMiB = mib
		default:
			return bad("unknown key %q (known: busy, mem)", key)
		}
	}
	slices.Sort(spec.Busy)
	return spec, nil
}

// parseMiB reads a size in binary units into MiB: "80G", "80GB", "80GiB", "40960M", "40960".
func parseMiB(s string) (uint64, error) {
	u := strings.ToUpper(s)
	mult := uint64(1)
	for _, suf := range []struct {
		s string
		m uint64
	}{{"TIB", 1 << 20}, {"TB", 1 << 20}, {"T", 1 << 20}, {"GIB", 1 << 10}, {"GB", 1 << 10}, {"G", 1 << 10}, {"MIB", 1}, {"MB", 1}, {"M", 1}} {
		if num, ok := strings.CutSuffix(u, suf.s); ok {
			u, mult = num, suf.m
			break
		}
	}
	v, err := strconv.ParseUint(strings.TrimSpace(u), 10, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%q is not a size like 80G or 40960M", s)
	}
	if v > (1<<40)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return v * mult, nil
}

// String gives the spec back in the form ParseSimSpec reads.
func (s SimSpec) String() string {
	if s.spec != "" {
		return s.spec
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sim:%d", s.Count)
	if len(s.Busy) > 0 {
		b.WriteString(",busy=")
		for i, d := range s.Busy {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
	}
	if s.MemMiB != 0 && s.MemMiB != DefaultSimMemMiB {
		fmt.Fprintf(&b, ",mem=%dM", s.MemMiB)
	}
	return b.String()
}

// simInventory is a fixed set of simulated devices; busy ones carry a simulated process
// (PID 0) holding half their memory.
type simInventory struct {
	spec SimSpec
	devs []Device
	// memDir is where simulated processes report their device memory
	// (SimMemoryFile); "" when none do.
	memDir string
}

// NewSimulated returns the inventory a SimSpec describes.
func NewSimulated(s SimSpec) Inventory {
	if s.MemMiB == 0 {
		s.MemMiB = DefaultSimMemMiB
	}
	devs := make([]Device, s.Count)
	for i := range devs {
		devs[i] = Device{
			Index:       i,
			UUID:        fmt.Sprintf("SIM-GPU-%d", i),
			Name:        fmt.Sprintf("simulated GPU (%s)", humanMiB(s.MemMiB)),
			MemTotalMiB: s.MemMiB,
			Simulated:   true,
		}
		if slices.Contains(s.Busy, i) {
			devs[i].MemUsedMiB = s.MemMiB / 2
			devs[i].Processes = []Process{{PID: 0, UsedMiB: s.MemMiB / 2}}
		}
	}
	return &simInventory{spec: s, devs: devs}
}

func (s *simInventory) Source() string { return SourceSimulated }
func (s *simInventory) Close() error   { return nil }

func (s *simInventory) Note() string {
	busy := ""
	if len(s.spec.Busy) > 0 {
		busy = fmt.Sprintf(", %d shown busy", len(s.spec.Busy))
	}
	return fmt.Sprintf("simulated GPUs, not real devices (%s=%s): %d GPUs%s", EnvGPUs, s.spec, s.spec.Count, busy)
}

func (s *simInventory) Devices(ctx context.Context) ([]Device, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Device, len(s.devs))
	for i, d := range s.devs {
		d.Processes = slices.Clone(d.Processes)
		out[i] = d
	}
	return out, nil
}

func (s *simInventory) DeviceMemory(ctx context.Context, index int) (uint64, []Process, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	if index < 0 || index >= len(s.devs) {
		return 0, nil, fmt.Errorf("gpu: simulated device %d: %w", index, ErrNoDevice)
	}
	d := s.devs[index]
	procs := append(slices.Clone(d.Processes), s.reported(index)...)
	used := d.MemUsedMiB
	for _, p := range procs[len(d.Processes):] {
		used += p.UsedMiB
	}
	return used, procs, nil
}

// Restrict offers only the devices a CUDA_VISIBLE_DEVICES value names, read the way CUDA
// reads it: comma-separated device indices or GPU UUIDs (a unique prefix such as "GPU-8a1f"
// is enough), stopping at the first entry that names no device, so "-1" hides every device.
// MIG instances ("MIG-...") are not leased by cairn and also end the list. Indices keep their
// NVML numbering: CUDA_VISIBLE_DEVICES=2,3 offers devices 2 and 3, not 0 and 1.
func Restrict(inv Inventory, cudaVisibleDevices string) Inventory {
	return &restricted{inner: inv, value: cudaVisibleDevices}
}

type restricted struct {
	inner Inventory
	value string

	mu      sync.Mutex
	allowed map[int]bool // resolved on the first successful device listing
}

func (r *restricted) Source() string { return r.inner.Source() }
func (r *restricted) Close() error   { return r.inner.Close() }

func (r *restricted) Note() string {
	return fmt.Sprintf("%s; only %s=%s offered", r.inner.Note(), EnvVisible, r.value)
}

func (r *restricted) Devices(ctx context.Context) ([]Device, error) {
	devs, err := r.inner.Devices(ctx)
	if err != nil {
		return nil, err
	}
	allowed := r.resolve(devs)
	out := devs[:0:0]
	for _, d := range devs {
		if allowed[d.Index] {
			out = append(out, d)
		}
	}
	return out, nil
}

func (r *restricted) DeviceMemory(ctx context.Context, index int) (uint64, []Process, error) {
	r.mu.Lock()
	allowed := r.allowed
	r.mu.Unlock()
	if allowed == nil {
		devs, err := r.inner.Devices(ctx)
		if err != nil {
			return 0, nil, err
		}
		allowed = r.resolve(devs)
	}
	if !allowed[index] {
		return 0, nil, fmt.Errorf("gpu: device %d (hidden by %s=%s): %w", index, EnvVisible, r.value, ErrNoDevice)
	}
	return r.inner.DeviceMemory(ctx, index)
}

func (r *restricted) resolve(devs []Device) map[int]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.allowed == nil {
		r.allowed = visibleSet(devs, r.value)
	}
	return r.allowed
}

// visibleSet resolves a CUDA_VISIBLE_DEVICES value against the devices present.
func visibleSet(devs []Device, value string) map[int]bool {
	allowed := map[int]bool{}
	for _, e := range strings.Split(value, ",") {
		e = strings.TrimSpace(e)
		idx := -1
		if n, err := strconv.Atoi(e); err == nil {
			for _, d := range devs {
				if d.Index == n {
					idx = n
				}
			}
		} else if strings.HasPrefix(e, "GPU-") {
			matches := 0
			for _, d := range devs {
				if strings.HasPrefix(d.UUID, e) {
					idx, matches = d.Index, matches+1
				}
			}
			if matches != 1 {
				idx = -1
			}
		}
		if idx < 0 || allowed[idx] {
			break
		}
		allowed[idx] = true
	}
	return allowed
}

// VisibleDevices is the CUDA_VISIBLE_DEVICES value for a node leased the given devices: their
// indices, or their UUIDs when byUUID is set (robust against differing enumeration orders).
// An index missing from devs is written as the index.
func VisibleDevices(devs []Device, indices []int, byUUID bool) string {
	parts := make([]string, 0, len(indices))
	for _, i := range indices {
		v := strconv.Itoa(i)
		if byUUID {
			for _, d := range devs {
				if d.Index == i && d.UUID != "" {
					v = d.UUID
				}
			}
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, ",")
}

// ChildEnv is the environment a node's process needs to see exactly its leased devices:
// CUDA_VISIBLE_DEVICES, plus CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers devices the
// way NVML (and so cairn) does.
func ChildEnv(devs []Device, indices []int, byUUID bool) []string {
	return []string{
		"CUDA_DEVICE_ORDER=PCI_BUS_ID",
		EnvVisible + "=" + VisibleDevices(devs, indices, byUUID),
	}
}

// humanMiB writes a MiB figure as GiB when it is a whole number of them.
func humanMiB(mib uint64) string {
	if mib >= 1024 && mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}
