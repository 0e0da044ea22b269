//go:build linux && cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoNVML: NVML is not available here (no driver library, or a build
// without cgo).
var ErrNoNVML = errors.New("gpu: NVML not available")

// NewNVML initialises NVML through lib (a mock in tests) and returns an
// inventory of its devices (newNVML for the default library name).
func NewNVML(lib nvml.Interface) (Inventory, error) {
	return newNVML(lib, nvmlLibraryName)
}

// Probe lists the real devices through NVML, ignoring CAIRN_GPUS and CUDA_VISIBLE_DEVICES:
// memory, compute processes, free or busy under the default policy, and the leases held in
// the machine-wide lease directory. Without NVML it writes why and returns an error wrapping
// ErrNoNVML.
func Probe(ctx context.Context, w io.Writer) error {
	inv := openNVML(os.Getenv)
	defer inv.Close()
	if inv.Source() != SourceNVML {
		fmt.Fprintln(w, inv.Note())
		return fmt.Errorf("%w: %s", ErrNoNVML, inv.Note())
	}
	devs, err := inv.Devices(ctx)
	if err != nil {
		return fmt.Errorf("gpu: probe: %w", err)
	}
	var holders map[int]Holder
	if _, err := os.Stat(LeaseDirPath(os.Getenv, inv)); err == nil {
		if ld, err := OpenLeaseDir(LeaseDirPath(os.Getenv, inv)); err == nil {
			holders, _ = ld.Holders()
		}
	}
	Render(w, inv, Classify(devs, FreePolicy{}), holders)
	var problems []error
	for _, d := range devs {
		if d.Problem != "" {
			problems = append(problems, fmt.Errorf("GPU %d: %s", d.Index, d.Problem))
		}
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("gpu: probe: %w", err)
	}
	return nil
}
