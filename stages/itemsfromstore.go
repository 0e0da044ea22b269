package stages

import (
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/stages/items"
)

// itemsFromStore says which lines of an evaluation's scores file (its
// items, in order) had their results in the item store already: the run
// report shows, per item, whether it came from the store or was asked.
// The scores file itself leaves it out, so that the same results make the
// same file.
func itemsFromStore(node, scores string, outs []items.ItemOutcome) *events.ItemsFromStore {
	e := &events.ItemsFromStore{Node: node, Scores: scores, Items: len(outs), FromStore: [][2]int{}}
	for i, o := range outs {
		if !o.Cached || o.Failed {
			continue
		}
		if k := len(e.FromStore); k > 0 && e.FromStore[k-1][1] == i {
			e.FromStore[k-1][1] = i + 1
		} else {
			e.FromStore = append(e.FromStore, [2]int{i, i + 1})
		}
	}
	return e
}
