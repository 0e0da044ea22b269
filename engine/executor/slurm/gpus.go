package slurm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-run/cairn/gpu"
)

// SourceSlurm is the source of a cluster's GPUs (gpu.Inventory.Source).
const SourceSlurm = "slurm"

// Inventory is the GPUs of the cluster's partition as cairn counts them:
// the sum of the nodes' gpu gres. cairn leases these slots to bound how many
// GPUs its jobs ask for at once (a GPU batch's waves); which devices a job
// gets is Slurm's choice, in the job's CUDA_VISIBLE_DEVICES.
type Inventory struct {
	n    int
	note string
}

// ClusterGPUs counts the GPUs of partition ("" for the default one) with
// one sinfo call.
func ClusterGPUs(ctx context.Context, opts Options) (*Inventory, error) {
	opts.defaults()
	c := &Client{opts: opts}
	args := []string{"--noheader", "--Node", "--format=%N|%G"}
	where := "the default partition"
	if opts.Partition != "" {
		args = append(args, "--partition="+opts.Partition)
		where = "partition " + opts.Partition
	}
	out, err := c.callRetry(ctx, "sinfo", args...)
	if err != nil {
		return nil, fmt.Errorf("slurm: counting the cluster's GPUs: %w", err)
	}
	seen := map[string]bool{}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		node, gres, ok := strings.Cut(line, "|")
		if !ok || seen[node] {
			continue
		}
		seen[node] = true
		n += gresGPUs(gres)
	}
	if len(seen) == 0 && opts.Partition != "" {
		// sinfo answers a partition it does not know with nothing, as
		// it answers one without nodes: the partitions it lists tell.
		return nil, c.noPartition(ctx, opts.Partition)
	}
	return &Inventory{n: n, note: fmt.Sprintf("Slurm: %d GPU(s) in %s, on %d node(s); each job's CUDA_VISIBLE_DEVICES is Slurm's", n, where, len(seen))}, nil
}

// ErrPartition is a partition the cluster does not have, or one with no
// node.
var ErrPartition = errors.New("slurm: no such partition")

// noPartition says that the cluster has no partition name, or that it
// has no node, with the partitions there are.
func (c *Client) noPartition(ctx context.Context, name string) error {
	out, err := c.callRetry(ctx, "sinfo", "--noheader", "--format=%R")
	var names []string
	if err == nil {
		for _, p := range strings.Fields(string(out)) {
			if !slices.Contains(names, p) {
				names = append(names, p)
			}
		}
	}
	switch {
	case slices.Contains(names, name):
		return fmt.Errorf("%w: partition %s has no node", ErrPartition, name)
	case len(names) > 0:
		return fmt.Errorf("%w: the cluster has no partition %s; its partitions: %s", ErrPartition, name, strings.Join(names, ", "))
	}
	return fmt.Errorf("%w: sinfo lists no node in partition %s", ErrPartition, name)
}

// Where implements gpu.Placed: the devices are the cluster's.
func (*Inventory) Where() string { return "the cluster" }

// gresGPUs counts the GPUs of one node's Gres column: "gpu:2",
// "gpu:a100:4(S:0-1)", "gpu:a100:2,gpu:v100:2".
func gresGPUs(gres string) int {
	n := 0
	for _, g := range strings.Split(gres, ",") {
		g, _, _ = strings.Cut(g, "(")
		f := strings.Split(g, ":")
		if f[0] != "gpu" || len(f) < 2 {
			continue
		}
		if k, err := strconv.Atoi(f[len(f)-1]); err == nil {
			n += k
		}
	}
	return n
}

// Source implements gpu.Inventory.
func (*Inventory) Source() string { return SourceSlurm }

// Note implements gpu.Inventory.
func (v *Inventory) Note() string { return v.note }

// Devices implements gpu.Inventory: one slot per GPU of the partition.
func (v *Inventory) Devices(context.Context) ([]gpu.Device, error) {
	out := make([]gpu.Device, v.n)
	for i := range out {
		out[i] = gpu.Device{Index: i, Name: "Slurm GPU slot"}
	}
	return out, nil
}

// DeviceMemory implements gpu.Inventory: cairn cannot see into the
// cluster's devices.
func (*Inventory) DeviceMemory(context.Context, int) (uint64, []gpu.Process, error) {
	return 0, nil, nil
}

// Close implements gpu.Inventory.
func (*Inventory) Close() error { return nil }
