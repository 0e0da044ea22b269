package items

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/sim/simmodel"
)

// An endpoint_concurrency below what the workers take at once
// (max_in_flight, times replicas) makes requests wait for an endpoint's
// slot, never stops them: the requests already written to a worker are
// sent to it before the wait, since only their replies free the slots.
// Every item is evaluated, with at most the limit at the endpoint at once.
func TestEndpointConcurrencyBelowWhatWorkersTake(t *testing.T) {
	const latency = 20 * time.Millisecond
	for _, tc := range []struct{ replicas, inFlight, limit int }{{1, 2, 1}, {1, 4, 2}, {2, 2, 2}, {2, 4, 1}} {
		t.Run(fmt.Sprintf("replicas=%d/in-flight=%d/limit=%d", tc.replicas, tc.inFlight, tc.limit), func(t *testing.T) {
			f := newFixture(t, simmodel.Config{Latency: latency})
			items := makeItems(12)
			cfg := f.config(items)
			cfg.Replicas, cfg.MaxInFlight, cfg.EndpointConcurrency = tc.replicas, tc.inFlight, tc.limit
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sum, err := Evaluate(ctx, cfg)
			require.NoError(t, err, f.diag.String())
			assert.Equal(t, 12, sum.Evaluated)
			assert.Zero(t, sum.Retried, "no item waited out a timeout")
			reqs := f.requests()
			require.Len(t, reqs, 12)
			var at []time.Time
			for _, e := range reqs {
				at = append(at, e.Time)
			}
			sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
			// A request arrives only once a slot is freed by a reply, at
			// least the latency after the request that held it.
			for i := tc.limit; i < len(at); i++ {
				assert.GreaterOrEqual(t, at[i].Sub(at[i-tc.limit]), latency, "request %d came while %d were at the endpoint", i, tc.limit)
			}
		})
	}
}
