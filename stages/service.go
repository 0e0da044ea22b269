package stages

import (
	"encoding/json"
	"time"
)

// Service is implemented by kinds whose node is a service its downstream
// nodes talk to while it runs (the serve kind: model servers). Such a node
// is never cached; it starts only when a consumer will run, publishes its
// result (its endpoints) once ready, and stops once no consumer still needs
// it (docs/serve.md).
type Service interface {
	// WeightsPath is the weights file or folder the node names (absolute,
	// or relative to the workspace root), "" when it names none or gives
	// their digest itself. The engine digests it (through its stat cache,
	// so that a large folder is not read again on every plan) and sets
	// Node.WeightsDigest.
	WeightsPath(n *Node) string
	// Identity is what the node's consumers' keys hold of it: what the
	// service answers with (the model id and the weights' identity), not
	// where it listens. It is the node's result when it was not started.
	Identity(n *Node) json.RawMessage
	// LeaseGPUs is how many GPUs the node leases when free GPUs are free
	// now: its GPUs per replica times its replicas.
	LeaseGPUs(n *Node, free int) int
	// GPUFreeWait bounds the wait, once the node's servers stopped, for
	// its GPUs' memory to show freed before they go back to the pool.
	GPUFreeWait(n *Node) time.Duration
}

// ServiceConsumer is implemented by kinds that can tell, before they run,
// whether they will send a service any request: an evaluation whose items
// are all in the item store sends none. identity is the service's
// Identity; cacheDir the cache root; replaced says --replace names the node,
// so that it runs even where it is not needed (needed = false). It only
// reads; when it cannot tell, it says true.
type ServiceConsumer interface {
	NeedsService(n *Node, root, cacheDir string, identity json.RawMessage, replaced bool) bool
}

// ServiceSkipper is implemented by kinds that can tell from what is known
// before their upstreams run that they will send no service any request:
// a phase its out folder holds already, an evaluation with needed =
// false. It only reads; false when it cannot tell.
type ServiceSkipper interface {
	SkipsService(n *Node, root string) bool
}

// ServiceHost is implemented by the engine's Runtime for a service node.
type ServiceHost interface {
	// Devices are the GPUs leased to the node, in order.
	Devices() []int
	// Serving publishes the node's result (its endpoints): its consumers
	// start. The channel it returns is closed once no consumer still
	// needs the service.
	Serving(result json.RawMessage) <-chan struct{}
	// ServeEvent records a service event in the run journal (status
	// "ready", "down", "restarted", "stopped", ...) with its replica's
	// pid, port and GPUs, and shows msg where apply's progress goes.
	ServeEvent(ev ServeEvent)
}

// ServeEvent is one event of a service node's replica.
type ServeEvent struct {
	Status   string // ready, down, restarting, stopped, port_skipped
	Replica  int    // from 1; 0: the node as a whole
	PID      int
	Port     int
	GPUs     []int
	Endpoint string
	Message  string
}
