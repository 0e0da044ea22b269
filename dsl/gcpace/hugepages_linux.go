package gcpace

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const hugePagesSupported = true

// adviseHuge advises the whole huge pages inside b to be huge pages
// (MADV_HUGEPAGE); an error (a kernel without them) leaves b as it was.
func adviseHuge(b []byte) {
	if len(b) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg := (start + hugePageSize - 1) &^ (hugePageSize - 1)
	end := (start + uintptr(len(b))) &^ (hugePageSize - 1)
	if beg >= end {
		return
	}
	_ = unix.Madvise(b[beg-start:end-start], unix.MADV_HUGEPAGE)
}
