package stages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-run/cairn/stages/items"
)

// BenchmarkEvaluateStart50k is what an evaluation of 50,000 items does
// before it can send its first request: read the dataset, give each item
// its canonical form, id and key, and look the keys up in the store.
func BenchmarkEvaluateStart50k(b *testing.B) {
	root := b.TempDir()
	f, err := os.Create(filepath.Join(root, "items.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 50_000 {
		fmt.Fprintf(f, `{"id": "q%d", "question": "What is %d + %d?", "answer": "%d"}`+"\n", i, i, i+1, 2*i+1)
	}
	f.Close()
	s := evalSpec{itemsPath: "items.jsonl", itemID: "id"}
	store, err := items.OpenStore(b.TempDir(), items.StoreOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	for b.Loop() {
		list, err := loadItems(root, s)
		if err != nil {
			b.Fatal(err)
		}
		// No worker: Evaluate stops once it knows what to send.
		sum, err := items.Evaluate(context.Background(), items.Config{Items: list, Store: store, ModelID: "m"})
		if !errors.Is(err, items.ErrWorker) || sum.Total != 50_000 {
			b.Fatalf("%d items: %v", sum.Total, err)
		}
	}
}
