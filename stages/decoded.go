package stages

import "github.com/hashicorp/hcl/v2"

// decodedSpec is a kind's decoding of a node's attributes, and what was
// wrong with them.
type decodedSpec[T any] struct {
	spec  T
	diags hcl.Diagnostics
}

// decodedOnce is decode(n), made once per node for the checks a plan
// makes of it: Check, DeclaredInputs, DeclaredOutputs, CheckWorkspace and
// PlanRefusal each read the decoding of the same attributes, which do not
// change once the node is evaluated (an evaluation makes a new Node).
// They read the spec without changing it; the diagnostics are returned
// with no room to grow, so that a caller appending to them appends to a
// copy. Run decodes afresh.
func decodedOnce[T any](n *Node, decode func(*Node) (T, hcl.Diagnostics)) (T, hcl.Diagnostics) {
	n.decoded.mu.Lock()
	defer n.decoded.mu.Unlock()
	d, ok := n.decoded.spec.(*decodedSpec[T])
	if !ok {
		s, diags := decode(n)
		d = &decodedSpec[T]{s, diags}
		n.decoded.spec = d
	}
	return d.spec, d.diags[:len(d.diags):len(d.diags)]
}
