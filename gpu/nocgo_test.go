//go:build !linux || !cgo

package gpu

import "runtime"

// noNVMLNote is what an inventory without a usable NVML says in this build.
var noNVMLNote = map[bool]string{
	true:  "built without cgo, so it cannot use NVML: 0 GPUs",
	false: "NVML is not available on " + runtime.GOOS + ", so cairn sees no GPUs: 0 GPUs",
}[runtime.GOOS == "linux"]
