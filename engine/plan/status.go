package plan

// Status is a node's state during apply. Its text is what upstreams'
// stages.Upstream.Status, messages and the JSON events say.
type Status string

// Node states during apply.
const (
	Pending Status = "pending"
	Running Status = "running"
	OK      Status = "ok"
	Cached  Status = "cached"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)
