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
	// cpus and memMiB are the largest of the partition's nodes' (0:
	// unknown): a job asking for more is never run (Slurm keeps it
	// pending, PartitionConfig).
	cpus, memMiB int
}

// ClusterGPUs counts the GPUs of partition ("" for the default one) with
// one sinfo call.
func ClusterGPUs(ctx context.Context, opts Options) (*Inventory, error) {
	opts.defaults()
	c := &Client{opts: opts}
	args := []string{"--noheader", "--Node", "--format=%N|%G|%c|%m"}
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
	inv := &Inventory{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 2 || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		inv.n += gresGPUs(f[1])
		if len(f) >= 4 {
			inv.cpus = max(inv.cpus, leadingInt(f[2]))
			inv.memMiB = max(inv.memMiB, leadingInt(f[3]))
		}
	}
	n := inv.n
	if len(seen) == 0 && opts.Partition != "" {
		// sinfo answers a partition it does not know with nothing, as
		// it answers one without nodes: the partitions it lists tell.
		return nil, c.noPartition(ctx, opts.Partition)
	}
	inv.note = fmt.Sprintf("Slurm: %d GPU(s) in %s, on %d node(s); each job's CUDA_VISIBLE_DEVICES is Slurm's", n, where, len(seen))
	return inv, nil
}

// leadingInt is the number a sinfo column starts with ("8", "8+" for
// nodes that differ, "64000"); 0 for none.
func leadingInt(s string) int {
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(s[:end])
	return n
}

// Refusal says why a job asking for cpus and memMiB (0: no ask) can never
// run in the partition: more than its largest node has, which Slurm
// accepts and keeps pending for ever (PartitionConfig); "" when it fits,
// or where sinfo did not say.
func (v *Inventory) Refusal(cpus, memMiB int) string {
	switch {
	case v.cpus > 0 && cpus > v.cpus:
		return fmt.Sprintf("asks for %d CPUs; the partition's largest node has %d (sinfo). Lower cpus, or name a partition with larger nodes in the pipeline's executor \"slurm\" block", cpus, v.cpus)
	case v.memMiB > 0 && memMiB > v.memMiB:
		return fmt.Sprintf("asks for %d MiB of memory; the partition's largest node has %d MiB (sinfo). Lower memory, or name a partition with larger nodes in the pipeline's executor \"slurm\" block", memMiB, v.memMiB)
	}
	return ""
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
