package simlib

import (
	"math"
	"time"
)

// The simulated benchmarks' sizes.
const (
	// RulerExamples is the number of examples in the simulated RULER
	// validation set; accuracies are multiples of 1/RulerExamples.
	RulerExamples = 200
	// AIMEProblems and AIMESamples shape the simulated AIME24 run:
	// mean@16 is a multiple of 1/(problems*samples), pass@16 of 1/problems.
	AIMEProblems = 30
	AIMESamples  = 16
)

// quality is the simulated attention quality of a sparse top-k config, in
// [0, 1): more of the KV cache kept (higher ratio, higher top-k) is better.
func quality(c *Config) float64 {
	return (1 - math.Exp(-12*c.TopkRatio)) * (1 - math.Exp(-float64(c.TopkVal)/256))
}

// RulerAccuracy is the simulated RULER accuracy of a valid config:
// sim.ruler_accuracy when set, otherwise a function of the top-k settings
// with a small hash-derived jitter. Ratios of 0.05 land well under the
// seed's 0.85 gate; ratios of 0.1 and more with a generous top-k pass it.
func RulerAccuracy(c *Config) float64 {
	if c.Sim.RulerAccuracy != nil {
		return *c.Sim.RulerAccuracy
	}
	a := 0.60 + 0.38*quality(c) + 0.02*(unit(c.ModelHash, 0)-0.5)
	return roundTo(clamp01(a), RulerExamples)
}

// Metrics are the simulated AIME24 results of one variant.
type Metrics struct {
	Mean16     float64 `json:"mean@16"`
	Pass16     float64 `json:"pass@16"`
	Throughput float64 `json:"throughput"` // output tokens per second
	E2ETime    float64 `json:"e2e_time"`   // seconds the run would have taken
}

// AIME24Metrics are the simulated AIME24 metrics of a valid config, with
// sim.metrics overrides applied. Accuracy rises and throughput falls with
// vortex_topk_ratio, so the (throughput, mean@16) plane has a real
// trade-off; hash-derived jitter makes some variants dominated.
func AIME24Metrics(c *Config) Metrics {
	q := quality(c)
	mean := roundTo(clamp01(0.12+0.38*q+0.04*(unit(c.ModelHash, 1)-0.5)), AIMEProblems*AIMESamples)
	pass := math.Max(
		math.Round((1-math.Pow(1-mean, 4))*AIMEProblems),
		math.Ceil(mean*AIMEProblems-1e-9),
	) / AIMEProblems
	tput := 4000 / (0.3 + 2.5*c.TopkRatio) * (1 + 0.06*(unit(c.ModelHash, 2)-0.5))
	tput = math.Round(tput*10) / 10
	const tokens = AIMEProblems * AIMESamples * 9000
	e2e := math.Round(tokens/tput*(1+0.04*(unit(c.ModelHash, 3)-0.5))*10) / 10
	m := Metrics{Mean16: mean, Pass16: pass, Throughput: tput, E2ETime: e2e}
	if o := c.Sim.Metrics; o != nil {
		set := func(dst *float64, src *float64) {
			if src != nil {
				*dst = *src
			}
		}
		set(&m.Mean16, o.Mean16)
		set(&m.Pass16, o.Pass16)
		set(&m.Throughput, o.Throughput)
		set(&m.E2ETime, o.E2ETime)
	}
	return m
}

// Duration is how long program works on config: sim.duration_ms when set,
// otherwise derived from the content hash (20-100 ms for preflight,
// 200-800 ms for the GPU programs).
func Duration(c *Config, program string) time.Duration {
	if ms, ok := c.Sim.Duration.Lookup(program); ok {
		return time.Duration(ms) * time.Millisecond
	}
	u := unit(c.ContentHash, 0)
	if program == Preflight {
		return time.Duration(20+80*u) * time.Millisecond
	}
	return time.Duration(200+600*u) * time.Millisecond
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

func roundTo(x float64, denom int) float64 {
	return math.Round(x*float64(denom)) / float64(denom)
}
