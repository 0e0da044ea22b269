// Package gpu knows which GPUs this machine has, which of them are free right now, and how
// to hand a node a set of them for exactly as long as its process lives.
//
// Inventory: Open picks the devices cairn offers. CAIRN_GPUS=sim:N stands in a simulated
// machine (laptops, CI, demos), named as simulated wherever it is shown. Otherwise NVML is
// used when cairn was built with cgo and the NVIDIA driver library loads; without a driver
// the inventory is empty and its Note says why, which is never an error. A
// CUDA_VISIBLE_DEVICES already set on cairn restricts the devices offered.
//
// Free now: Classify decides per device whether it can be given to a node: not leased by
// another cairn, no foreign compute processes, and used memory under a threshold (devices
// cairn has just released get a grace period for their memory to drain).
//
// Leases: one lock file per device in a machine-wide directory, flock'ed exclusively, so
// concurrent cairn processes never hand one GPU to two nodes. The node's process inherits
// the locked descriptors, so that should cairn be killed a lease lives exactly as long as the
// process tree using it; while cairn runs, Pool.Release ends it when the node is over.
//
// Pool: what an apply holds of all this. NewPool opens the inventory and the lease folder;
// Acquire and AcquireExact lease free devices to a node, ChildEnv pins them for its
// process (CUDA_VISIBLE_DEVICES), Sampler measures it, Release gives them back.
//
// Peak memory: a Sampler follows a node's process tree (host RSS from /proc, GPU memory of
// its leased devices from the inventory) and keeps the maxima; DiagnoseOOM and
// CgroupOOMKills tell an out-of-memory failure from a plain kill.
package gpu
