//go:build linux && cgo

package gpu

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlInventory reads the real devices through NVML.
type nvmlInventory struct {
	lib  nvml.Interface
	note string

	closeOnce sync.Once
	closeErr  error
}

// newNVML initialises NVML through lib (the real library from nvml.New, or
// a mock in tests) loaded from libName, and returns an inventory of its
// devices. When the driver library is missing or the kernel driver is not
// loaded, it returns an empty inventory whose Note says so, and no error:
// that is a machine without NVIDIA GPUs. Any other initialisation failure is
// an error, returned together with an empty inventory that says why, so
// callers may carry on without GPUs.
func newNVML(lib nvml.Interface, libName string) (Inventory, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return NewNone(fmt.Sprintf("no NVIDIA driver here (%s not found): 0 GPUs", libName)), nil
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return NewNone("no NVIDIA driver here (NVML loaded, but the kernel driver is not): 0 GPUs"), nil
	default:
		err := nvmlError("Init", ret)
		return NewNone(fmt.Sprintf("NVML failed to start (%s): 0 GPUs", retString(ret))), err
	}
	inv := &nvmlInventory{lib: lib}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		_ = lib.Shutdown()
		err := nvmlError("DeviceGetCount", ret)
		return NewNone(fmt.Sprintf("NVML cannot count devices (%s): 0 GPUs", retString(ret))), err
	}
	inv.note = fmt.Sprintf("NVML: %d GPUs", n)
	if drv, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS && drv != "" {
		inv.note = fmt.Sprintf("NVML, driver %s: %d GPUs", drv, n)
	}
	return inv, nil
}

// nvmlLibraryName is the library NVML loads unless CAIRN_NVML_LIBRARY says otherwise.
const nvmlLibraryName = "libnvidia-ml.so.1"

// openNVML loads the system's NVML; without it, the inventory is empty and says why.
func openNVML(env func(string) string) Inventory {
	name := nvmlLibraryName
	var opts []nvml.LibraryOption
	if p := env(EnvNVMLLibrary); p != "" {
		name = p
		opts = append(opts, nvml.WithLibraryPath(p))
	}
	inv, _ := newNVML(nvml.New(opts...), name) // on failure inv is empty and its note says why
	return inv
}

func (v *nvmlInventory) Source() string { return SourceNVML }
func (v *nvmlInventory) Note() string   { return v.note }

func (v *nvmlInventory) Close() error {
	v.closeOnce.Do(func() {
		if ret := v.lib.Shutdown(); ret != nvml.SUCCESS {
			v.closeErr = nvmlError("Shutdown", ret)
		}
	})
	return v.closeErr
}

func (v *nvmlInventory) Devices(ctx context.Context) ([]Device, error) {
	n, ret := v.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, nvmlError("DeviceGetCount", ret)
	}
	devs := make([]Device, 0, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		devs = append(devs, v.device(i))
	}
	return devs, nil
}

// device reads one device; what cannot be read lands in Problem rather than failing the list.
func (v *nvmlInventory) device(i int) Device {
	d := Device{Index: i}
	h, ret := v.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		d.Problem = "NVML cannot open it: " + retString(ret)
		return d
	}
	if uuid, ret := h.GetUUID(); ret == nvml.SUCCESS {
		d.UUID = uuid
	}
	if name, ret := h.GetName(); ret == nvml.SUCCESS {
		d.Name = name
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		d.Problem = "NVML cannot read its memory: " + retString(ret)
		return d
	}
	d.MemTotalMiB, d.MemUsedMiB = mem.Total>>20, mem.Used>>20
	procs, err := processes(h)
	if err != nil {
		d.Problem = "NVML cannot list its processes: " + err.Error()
		return d
	}
	d.Processes = procs
	return d
}

func (v *nvmlInventory) DeviceMemory(ctx context.Context, index int) (uint64, []Process, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	h, ret := v.lib.DeviceGetHandleByIndex(index)
	if ret == nvml.ERROR_INVALID_ARGUMENT || ret == nvml.ERROR_NOT_FOUND {
		return 0, nil, fmt.Errorf("gpu: device %d: %w", index, ErrNoDevice)
	}
	if ret != nvml.SUCCESS {
		return 0, nil, fmt.Errorf("device %d: %w", index, nvmlError("DeviceGetHandleByIndex", ret))
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return 0, nil, fmt.Errorf("device %d: %w", index, nvmlError("DeviceGetMemoryInfo", ret))
	}
	procs, err := processes(h)
	if err != nil {
		return 0, nil, fmt.Errorf("device %d: %w", index, err)
	}
	return mem.Used >> 20, procs, nil
}

// processes lists a device's compute processes. A device that cannot report them (NVML's
// NOT_SUPPORTED) has none as far as cairn can tell.
func processes(h nvml.Device) ([]Process, error) {
	infos, ret := h.GetComputeRunningProcesses()
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_SUPPORTED:
		return nil, nil
	default:
		return nil, nvmlError("DeviceGetComputeRunningProcesses", ret)
	}
	procs := make([]Process, 0, len(infos))
	for _, p := range infos {
		used := p.UsedGpuMemory
		if used == math.MaxUint64 { // NVML_VALUE_NOT_AVAILABLE
			used = 0
		}
		procs = append(procs, Process{PID: int(p.Pid), UsedMiB: used >> 20})
	}
	return procs, nil
}

// nvmlError turns an nvml.Return into an error wrapping ErrNVML; this and retString are the
// only places an nvml.Return becomes something else.
func nvmlError(op string, ret nvml.Return) error {
	return fmt.Errorf("%w: %s: %s", ErrNVML, op, retString(ret))
}

// retString names an nvml.Return. It works whether or not the library is loaded.
func retString(ret nvml.Return) string {
	return ret.Error()
}
