//go:build !cgo

package gpu

// openNVML: without cgo there is no NVML binding, so no real devices.
func openNVML(func(string) string) Inventory {
	return NewNone("this cairn was built without cgo, so it cannot use NVML: 0 GPUs")
}
