//go:build !cgo

package gpu

// noNVMLNote is what an inventory without a usable NVML says in this build.
const noNVMLNote = "built without cgo, so it cannot use NVML: 0 GPUs"
