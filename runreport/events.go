package runreport

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// EventLogName is a run's event log in its run folder (docs/events.md):
// where the report takes what the journal does not keep, when the run
// has one.
const EventLogName = "events.jsonl"

// event is the part of an event log line the report reads.
type event struct {
	Type          string    `json:"type"`
	Time          time.Time `json:"time"`
	Node          string    `json:"node"`
	Text          string    `json:"text"`
	Charged       int       `json:"charged"`
	Attempted     int       `json:"attempted"`
	InfraFailures int       `json:"infra_failures"`
	Budget        int       `json:"budget"`
	// gpu_memory
	Attempt int       `json:"attempt"`
	GPU     int       `json:"gpu"`
	Start   time.Time `json:"start"`
	TMs     []int64   `json:"t_ms"`
	MiB     []float64 `json:"mib"`
	// items_from_store's spans; a number in other events (rollout_counts)
	FromStore json.RawMessage `json:"from_store"`
}

// readEvents adds what the run's event log says beyond the journal: each
// optimization's rollout meter over time (charged, attempted,
// infrastructure failures), each GPU's memory use over time, which items
// of an evaluation came from the item store, and the warnings and notes people should
// read. A run without an event log (an older cairn) keeps what its
// journal says; a line that does not read is skipped.
func (b *builder) readEvents(runDir string) {
	f, err := os.Open(filepath.Join(runDir, EventLogName))
	if err != nil {
		return
	}
	defer f.Close()
	meters := map[string]*Charge{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Type {
		case "rollout_counts":
			c, ok := meters[e.Node]
			if !ok {
				c = &Charge{Node: e.Node, FromEvents: true}
				meters[e.Node] = c
				order = append(order, e.Node)
			}
			c.T = append(c.T, e.Time.Sub(b.ri.Start).Seconds())
			c.N = append(c.N, e.Charged)
			c.Attempted = append(c.Attempted, e.Attempted)
			c.Infra = append(c.Infra, e.InfraFailures)
			c.Budget = e.Budget
		case "gpu_memory":
			if len(e.TMs) != len(e.MiB) || len(e.MiB) == 0 {
				continue
			}
			g := &GPUSeries{GPU: e.GPU, Node: e.Node, Attempt: e.Attempt, MiB: e.MiB}
			for _, ms := range e.TMs {
				g.T = append(g.T, e.Start.Add(time.Duration(ms)*time.Millisecond))
			}
			b.r.GPUMemory = append(b.r.GPUMemory, g)
		case "items_from_store":
			var spans [][2]int
			if n := b.byAddr[e.Node]; n != nil && json.Unmarshal(e.FromStore, &spans) == nil {
				n.fromStore, n.origins = spans, true
			}
		case "warning", "info", "executor_error":
			b.r.Run.Notes = append(b.r.Run.Notes, e.Type+": "+e.Text)
		}
	}
	if len(meters) == 0 {
		return
	}
	// The event log's meters replace the journal's charged records of
	// the same nodes: they also count attempts and infrastructure
	// failures.
	kept := b.r.Charges[:0]
	for _, c := range b.r.Charges {
		if meters[c.Node] == nil {
			kept = append(kept, c)
		}
	}
	b.r.Charges = kept
	for _, n := range order {
		b.r.Charges = append(b.r.Charges, meters[n])
	}
}
