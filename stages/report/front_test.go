package report

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var nan = math.NaN()

func TestFront(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name   string
		points [][2]float64
		want   []int
	}{
		{"empty", nil, []int{}},
		{"single", [][2]float64{{3, 0.4}}, []int{0}},
		{"one dominates all", [][2]float64{{1, 1}, {9, 9}, {2, 8}, {8, 2}}, []int{1}},
		{"all on the front", [][2]float64{{1, 4}, {2, 3}, {3, 2}, {4, 1}}, []int{0, 1, 2, 3}},
		{"seed-like batch", [][2]float64{{9538.5, 0.2771}, {7295.5, 0.3958}, {5918.2, 0.3875}, {4358.9, 0.4833}}, []int{0, 1, 3}},
		{"identical points on the front", [][2]float64{{2, 2}, {2, 2}, {1, 1}}, []int{0, 1}},
		{"identical points dominated", [][2]float64{{1, 1}, {1, 1}, {2, 2}}, []int{2}},
		{"all identical", [][2]float64{{5, 5}, {5, 5}, {5, 5}}, []int{0, 1, 2}},
		{"same x, higher y wins", [][2]float64{{3, 1}, {3, 2}}, []int{1}},
		{"same y, higher x wins", [][2]float64{{1, 3}, {2, 3}}, []int{1}},
		{"tie in x with the front's top", [][2]float64{{5, 1}, {5, 1}, {4, 1}, {4, 2}}, []int{0, 1, 3}},
		{"NaN x is not comparable", [][2]float64{{nan, 100}, {1, 1}}, []int{1}},
		{"NaN y is not comparable", [][2]float64{{100, nan}, {1, 1}}, []int{1}},
		{"only NaN", [][2]float64{{nan, nan}}, []int{}},
		{"infinities compare", [][2]float64{{inf, 0}, {0, 1}, {-inf, 2}, {-inf, -inf}}, []int{0, 1, 2}},
		{"negative values", [][2]float64{{-1, -5}, {-2, -1}, {-3, -6}}, []int{0, 1}},
		{"zero signs are equal", [][2]float64{{0, 1}, {math.Copysign(0, -1), 1}}, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Front(tt.points)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, naiveFront(tt.points), got, "agrees with the definition")
		})
	}
}

// naiveFront is the definition, checked pairwise.
func naiveFront(points [][2]float64) []int {
	front := []int{}
	for i, p := range points {
		if math.IsNaN(p[0]) || math.IsNaN(p[1]) {
			continue
		}
		dominated := false
		for j, q := range points {
			if j == i || math.IsNaN(q[0]) || math.IsNaN(q[1]) {
				continue
			}
			if q[0] >= p[0] && q[1] >= p[1] && (q[0] > p[0] || q[1] > p[1]) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	return front
}

// Small integer grids make ties and identical points common.
func TestFrontMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := 0; c < 2000; c++ {
		n := rng.IntN(12)
		pts := make([][2]float64, n)
		for i := range pts {
			pts[i] = [2]float64{float64(rng.IntN(5)), float64(rng.IntN(5))}
			if rng.IntN(10) == 0 {
				pts[i][rng.IntN(2)] = nan
			}
		}
		require.Equal(t, naiveFront(pts), Front(pts), "points %v", pts)
	}
}

func TestRowFront(t *testing.T) {
	rows := []Row{
		{Name: "a", Throughput: 100, Mean16: 0.5},
		{Name: "b", Throughput: 200, Mean16: 0.4},
		{Name: "broken", Throughput: 1e9, Mean16: 1, Failed: true, FailReason: "RULER 0.71 < 0.85"},
		{Name: "c", Throughput: 150, Mean16: 0.3},
		{Name: "nan", Throughput: nan, Mean16: 0.9},
	}
	front, err := RowFront(rows, ColThroughput, ColMean16)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, front, "the failed row would dominate everything, but it is not compared")

	// Extra metrics work as axes; rows without them are not comparable.
	rows[0].Extra = map[string]any{"ruler": 0.91}
	rows[1].Extra = map[string]any{"ruler": 0.88}
	rows[3].Extra = map[string]any{"ruler": 0.97}
	front, err = RowFront(rows, "ruler", ColMean16)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 3}, front)

	_, err = RowFront(rows, "troughput", ColMean16)
	require.ErrorIs(t, err, ErrUnknownMetric)
	assert.ErrorContains(t, err, `"troughput"`)

	front, err = RowFront(nil, ColThroughput, ColMean16)
	require.NoError(t, err)
	assert.Empty(t, front)
	front, err = RowFront([]Row{{Name: "x", Failed: true}}, "anything", ColMean16)
	require.NoError(t, err, "with no live row, nothing tells a misspelling")
	assert.Empty(t, front)
}

func TestRowNumber(t *testing.T) {
	r := Row{Name: "n", E2ETime: 12.5, Extra: map[string]any{"i": 3, "s": "text", "f32": float32(0.5)}}
	v, ok := r.Number(ColE2ETime)
	assert.True(t, ok)
	assert.Equal(t, 12.5, v)
	v, ok = r.Number("i")
	assert.True(t, ok)
	assert.Equal(t, 3.0, v)
	v, ok = r.Number("f32")
	assert.True(t, ok)
	assert.Equal(t, 0.5, v)
	_, ok = r.Number("s")
	assert.False(t, ok)
	_, ok = r.Number(ColName)
	assert.False(t, ok)
	_, ok = r.Number("absent")
	assert.False(t, ok)
}

func BenchmarkFront(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	pts := make([][2]float64, 10000)
	for i := range pts {
		pts[i] = [2]float64{rng.Float64(), rng.Float64()}
	}
	for b.Loop() {
		Front(pts)
	}
}
