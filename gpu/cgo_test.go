//go:build linux && cgo

package gpu

// noNVMLNote is what an inventory without a usable NVML says in this build.
const noNVMLNote = "no NVIDIA driver here (/nonexistent/libnvidia-ml.so.1 not found): 0 GPUs"
