// Package simlib holds the logic of cairn's SIMULATED seed-000 workloads:
// stand-ins for the engine preflight check, the RULER gate and the AIME24
// runner of the 4-variant batch workflow. They let the demo pipelines and the
// end-to-end tests run on machines without GPUs or Python; nothing they report
// is a real measurement, and every JSON file they write says "simulated": true.
//
// The programs mimic the real tools' command lines, so a pipeline file is the
// same for real and simulated runs; only the argv differs:
//
//	preflight CONFIG.json                           check_engine_config(CONFIG)
//	ruler  --config submissions/<tag>/<name>.json   algorithm_scientist/run_ruler.py
//	aime24 --config submissions/<tag>/<name>.json   algorithm_scientist/run_submission_aime24.py
//
// The thin main packages live under sim/work/ and are built with
// `go build ./sim/work/<name>`.
//
// A config is a JSON object. The fields the simulated engine checks are
// vortex_topk_val (an integer > 0) and vortex_topk_ratio (0 < r <= 1). An
// optional "sim" object steers the simulation; see [Sim].
package simlib

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

// The three simulated programs.
const (
	Preflight = "preflight"
	Ruler     = "ruler"
	AIME24    = "aime24"
)

// Programs lists the simulated programs in pipeline order.
var Programs = []string{Preflight, Ruler, AIME24}

// ErrInvalidConfig is wrapped by every error about a config's content.
var ErrInvalidConfig = errors.New("simlib: invalid config")

// Sim is the optional "sim" object of a config. Every field is optional.
type Sim struct {
	// Duration is how long a program works before it finishes: a number of
	// milliseconds for every program, or an object keyed by program name
	// ({"preflight": 10, "aime24": 5000}). Unset, the duration is derived
	// from the config's hash: 20-100 ms for preflight, 200-800 ms otherwise.
	Duration Durations `json:"duration_ms"`

	// The failure fields below apply to the programs listed in Stages
	// (all three when Stages is empty).

	// ExitCode makes the program exit with this status after its work
	// (results are written first).
	ExitCode int `json:"exit_code"`
	// Crash makes the program print a Python-like traceback and exit 3
	// without writing results.
	Crash bool `json:"crash"`
	// Hang makes the program sleep until a signal ends it. SIGTERM does.
	Hang bool `json:"hang"`
	// OOM makes the program print a CUDA out-of-memory error and exit 1
	// without writing results.
	OOM bool `json:"oom"`
	// IgnoreSIGTERM makes the program ignore SIGTERM, so only SIGKILL ends
	// it; for testing a runner's escalation after a timeout.
	IgnoreSIGTERM bool `json:"ignore_sigterm"`
	// Stages restricts the failure fields to these programs.
	Stages []string `json:"stages"`

	// PreflightError makes preflight fail with this message.
	PreflightError string `json:"preflight_error"`
	// RulerAccuracy replaces the derived RULER accuracy.
	RulerAccuracy *float64 `json:"ruler_accuracy"`
	// Metrics replaces some or all of the derived AIME24 metrics.
	Metrics *MetricOverrides `json:"metrics"`
}

// MetricOverrides replaces derived AIME24 metrics with fixed values.
type MetricOverrides struct {
	Mean16     *float64 `json:"mean@16"`
	Pass16     *float64 `json:"pass@16"`
	Throughput *float64 `json:"throughput"`
	E2ETime    *float64 `json:"e2e_time"`
}

// Durations maps a program name to a duration in milliseconds; the key "*"
// applies to every program without its own entry.
type Durations map[string]int64

// UnmarshalJSON accepts a number (every program) or an object keyed by
// program name.
func (d *Durations) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*d = nil
		return nil
	}
	if len(b) > 0 && b[0] == '{' {
		var m map[string]int64
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("duration_ms: want milliseconds or an object of them by program: %w", err)
		}
		for k, v := range m {
			if !slices.Contains(Programs, k) {
				return fmt.Errorf("duration_ms: unknown program %q (want one of %v)", k, Programs)
			}
			if v < 0 {
				return fmt.Errorf("duration_ms: %s: negative duration %d", k, v)
			}
		}
		*d = m
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration_ms: want milliseconds or an object of them by program: %w", err)
	}
	if n < 0 {
		return fmt.Errorf("duration_ms: negative duration %d", n)
	}
	*d = Durations{"*": n}
	return nil
}

// Lookup returns the configured duration for program, if any.
func (d Durations) Lookup(program string) (int64, bool) {
	if v, ok := d[program]; ok {
		return v, true
	}
	v, ok := d["*"]
	return v, ok
}

// AppliesTo reports whether the failure fields apply to program.
func (s *Sim) AppliesTo(program string) bool {
	return len(s.Stages) == 0 || slices.Contains(s.Stages, program)
}

// Config is a parsed engine config.
type Config struct {
	// TopkVal and TopkRatio are vortex_topk_val and vortex_topk_ratio; their
	// zero values mean the field is absent or malformed (see Validate).
	TopkVal   int64
	TopkRatio float64
	Sim       Sim

	// ContentHash is the hex sha256 of the canonical form of the whole
	// config (object keys sorted, no insignificant whitespace, numbers as
	// written), so reformatting a file does not change it.
	ContentHash string
	// ModelHash is the same over the config without its "sim" object: the
	// simulated quality of a variant depends on what it configures, not on
	// how the simulation is staged.
	ModelHash string

	fields map[string]any
	// problems are the field errors found while parsing; Validate reports them.
	problems []string
}

// LoadConfig reads and parses the config at path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("simlib: read config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig parses a config. It fails on anything that is not a single
// JSON object or on a malformed "sim" object; problems with the engine fields
// are kept for Validate, so a config with a bad top-k still has a hash.
func ParseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %w", ErrInvalidConfig, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidConfig)
	}
	fields, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: want a JSON object, got %s", ErrInvalidConfig, jsonKind(v))
	}
	c := &Config{fields: fields}

	canon, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c.ContentHash = hashHex(canon)
	model := make(map[string]any, len(fields))
	for k, v := range fields {
		if k != "sim" {
			model[k] = v
		}
	}
	canon, err = json.Marshal(model)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c.ModelHash = hashHex(canon)

	if raw, ok := fields["sim"]; ok {
		b, _ := json.Marshal(raw)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.Sim); err != nil {
			return nil, fmt.Errorf("%w: sim: %w", ErrInvalidConfig, err)
		}
		for _, s := range c.Sim.Stages {
			if !slices.Contains(Programs, s) {
				return nil, fmt.Errorf("%w: sim.stages: unknown program %q (want one of %v)", ErrInvalidConfig, s, Programs)
			}
		}
	}

	switch n, ok := fields["vortex_topk_val"].(json.Number); {
	case fields["vortex_topk_val"] == nil:
		c.problems = append(c.problems, "vortex_topk_val is required")
	case !ok:
		c.problems = append(c.problems, fmt.Sprintf("vortex_topk_val must be an integer, got %s", jsonKind(fields["vortex_topk_val"])))
	default:
		i, err := strconv.ParseInt(n.String(), 10, 64)
		switch {
		case err != nil:
			c.problems = append(c.problems, fmt.Sprintf("vortex_topk_val must be an integer, got %s", n))
		case i <= 0:
			c.problems = append(c.problems, fmt.Sprintf("vortex_topk_val must be > 0, got %d", i))
		default:
			c.TopkVal = i
		}
	}
	switch n, ok := fields["vortex_topk_ratio"].(json.Number); {
	case fields["vortex_topk_ratio"] == nil:
		c.problems = append(c.problems, "vortex_topk_ratio is required")
	case !ok:
		c.problems = append(c.problems, fmt.Sprintf("vortex_topk_ratio must be a number, got %s", jsonKind(fields["vortex_topk_ratio"])))
	default:
		r, err := n.Float64()
		switch {
		case err != nil:
			c.problems = append(c.problems, fmt.Sprintf("vortex_topk_ratio must be a number, got %s", n))
		case !(r > 0 && r <= 1):
			c.problems = append(c.problems, fmt.Sprintf("vortex_topk_ratio must be in (0, 1], got %s", n))
		default:
			c.TopkRatio = r
		}
	}
	return c, nil
}

// Validate reports what the simulated engine check rejects: a missing or
// out-of-range vortex_topk_val or vortex_topk_ratio.
func (c *Config) Validate() error {
	if len(c.problems) == 0 {
		return nil
	}
	msg := c.problems[0]
	for _, p := range c.problems[1:] {
		msg += "; " + p
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, msg)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// unit returns the i-th deterministic number in [0, 1) drawn from a hex
// hash (i in 0..3).
func unit(hexHash string, i int) float64 {
	b, err := hex.DecodeString(hexHash)
	if err != nil || len(b) < 8*(i+1) {
		return 0.5
	}
	return float64(binary.BigEndian.Uint64(b[8*i:])>>11) / (1 << 53)
}
