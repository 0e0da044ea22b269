package runlog

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/process"
)

// randomEntry fills a random subset of an Entry's fields with values
// that are awkward to encode: quotes, control characters, invalid UTF-8,
// HTML characters, tiny and huge numbers.
func randomEntry(r *rand.Rand) Entry {
	strs := []string{"", "a", `stage.x["a"]`, "tab\there", "ctl\x01\x1f", "bad\xff", `back\slash`, "<&>", "ünï ✓", "\u2028", "line\nend"}
	str := func() string { return strs[r.IntN(len(strs))] }
	floats := []float64{0, 1, -1, 0.5, 1e-7, 1e-6, 123456.789, 1e20, 1e21, 2.5e300, -3e-9, math.SmallestNonzeroFloat64, 1.0 / 3}
	some := func() bool { return r.IntN(2) == 0 }
	e := Entry{T: str(), Time: time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("z", 3600*(r.IntN(25)-12)))}
	if some() {
		e.Time = e.Time.UTC()
	}
	if some() {
		e.Node, e.Key, e.Attempt = str(), str(), r.IntN(5)
	}
	if some() {
		e.Job = &process.JobRef{Executor: str(), ID: str()}
		if some() {
			e.Job.Details = map[string]string{str(): str(), "pgid": "12", "b": str()}
		}
		e.PID, e.PGID, e.ProcTick = r.IntN(1<<22), -r.IntN(3), r.Uint64()
	}
	if some() {
		e.GPUs = []int{r.IntN(8), -1}[:1+r.IntN(2)]
		e.Wave = r.IntN(3)
	}
	if some() {
		e.Class, e.Message, e.Status = str(), str(), str()
		e.Left = some()
		if some() {
			e.OnInterrupt = str()
		}
	}
	if some() {
		e.Duration, e.PeakRSS, e.PeakGPU = floats[r.IntN(len(floats))], floats[r.IntN(len(floats))], floats[r.IntN(len(floats))]
		e.Queued = floats[r.IntN(len(floats))]
	}
	if some() {
		e.Logs = []string{str(), str()}[:r.IntN(3)]
		e.Count, e.Item = r.IntN(3), str()
	}
	if some() {
		e.Counts = map[string]int{str(): r.IntN(100), "items": 3, "z": -r.IntN(4)}
	}
	if some() {
		e.RunID, e.Pipeline, e.Args = str(), str(), []string{str(), str(), str()}[:r.IntN(4)]
		e.Rerun = []string{str(), str()}[:r.IntN(3)]
	}
	if some() {
		e.Host, e.Dir, e.Version = str(), str(), str()
		e.Reasons = []string{str(), str()}[:r.IntN(3)]
		e.Waits = []string{str(), str()}[:r.IntN(3)]
		if some() {
			e.Devices = []Device{{Index: r.IntN(8), Name: str(), MemoryMiB: r.Uint64N(1 << 20)}}
		}
	}
	return e
}

// The hand encoder reads back as the same Entry encoding/json's output
// does, for entries with every mix of fields.
func TestMarshalEntryReadsBackLikeEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		e := randomEntry(r)
		want, err := json.Marshal(e)
		require.NoError(t, err)
		got, err := marshalEntry(&e)
		require.NoError(t, err)
		require.True(t, json.Valid(got), "entry %d: %s", i, got)
		var a, b Entry
		require.NoError(t, json.Unmarshal(want, &a))
		require.NoError(t, json.Unmarshal(got, &b))
		require.Equal(t, a, b, "entry %d:\nencoding/json: %s\nby hand:       %s", i, want, got)
		// The same keys, in the same order: what a reader of the raw
		// journal (jq, a script) sees.
		var ka, kb []string
		for _, raw := range [][]byte{want, got} {
			var keys []string
			d := json.NewDecoder(bytes.NewReader(raw))
			_, _ = d.Token()
			for d.More() {
				k, _ := d.Token()
				keys = append(keys, k.(string))
				var skip json.RawMessage
				_ = d.Decode(&skip)
			}
			if ka == nil {
				ka = keys
			} else {
				kb = keys
			}
		}
		require.Equal(t, ka, kb, "entry %d", i)
	}
}

// Numbers are written byte for byte as encoding/json writes them, and
// what it refuses (NaN, infinities) is refused the same way.
func TestMarshalEntryNumbers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if r.IntN(2) == 0 {
			f = r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
		}
		if !finite(f) {
			continue
		}
		want, err := json.Marshal(f)
		require.NoError(t, err)
		got := appendFloatField(nil, "x", f)
		if f == 0 {
			assert.Empty(t, got)
			continue
		}
		require.Equal(t, `,"x":`+string(want), string(got), "%v (%s)", f, strconv.FormatFloat(f, 'g', -1, 64))
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		e := Entry{T: Started, Duration: bad}
		_, err := marshalEntry(&e)
		_, want := json.Marshal(e)
		require.Error(t, err)
		assert.Equal(t, want.Error(), err.Error())
	}
}
