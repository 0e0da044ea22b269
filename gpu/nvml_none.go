//go:build !linux || !cgo

package gpu

import "runtime"

// openNVML: cairn reaches NVML through go-nvml's cgo binding, on Linux
// only; without it there are no real devices.
func openNVML(func(string) string) Inventory {
	return NewNone(noNVML(runtime.GOOS))
}

// noNVML says why this build has no NVML: the system (goos), or, on Linux,
// a build without cgo.
func noNVML(goos string) string {
	if goos != "linux" {
		return "NVML is not available on " + goos + ", so cairn sees no GPUs: 0 GPUs"
	}
	return "this cairn was built without cgo, so it cannot use NVML: 0 GPUs"
}
