package runlog

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/cairn-run/cairn/dsl/jsonwrite"
)

// marshalEntry is json.Marshal of e, encoded by hand for the records a
// run writes for every node (started, finished, failed): the reflection of
// encoding/json, and its time encoding, cost more than the rest of the
// record's handling. It reads back (json.Unmarshal) as the same Entry;
// what the hand encoder does not cover (a batch, a time or a number JSON
// cannot hold) goes through encoding/json, which also reports the error.
func marshalEntry(e *Entry) ([]byte, error) {
	if e.Batch != nil || len(e.Devices) > 0 || e.Time.Year() < 0 || e.Time.Year() > 9999 ||
		!finite(e.Duration) || !finite(e.PeakRSS) || !finite(e.PeakGPU) || !finite(e.Queued) {
		return json.Marshal(e)
	}
	b := make([]byte, 0, 160+len(e.Node)+len(e.Key)+len(e.Message))
	b = append(b, `{"t":`...)
	b = appendJSONString(b, e.T)
	b = append(b, `,"time":"`...)
	b = e.Time.AppendFormat(b, "2006-01-02T15:04:05.999999999Z07:00")
	b = append(b, '"')
	b = appendStringField(b, "node", e.Node)
	b = appendStringField(b, "key", e.Key)
	b = appendStringField(b, "kind", e.Kind)
	b = appendIntField(b, "attempt", int64(e.Attempt))
	if e.Job != nil {
		b = append(b, `,"job":{"executor":`...)
		b = appendJSONString(b, e.Job.Executor)
		b = append(b, `,"id":`...)
		b = appendJSONString(b, e.Job.ID)
		if len(e.Job.Details) > 0 {
			b = append(b, `,"details":{`...)
			for i, k := range slices.Sorted(maps.Keys(e.Job.Details)) {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, k)
				b = append(b, ':')
				b = appendJSONString(b, e.Job.Details[k])
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = appendIntField(b, "pid", int64(e.PID))
	b = appendIntField(b, "pgid", int64(e.PGID))
	if e.ProcTick != 0 {
		b = append(b, `,"proc_start":`...)
		b = strconv.AppendUint(b, e.ProcTick, 10)
	}
	if len(e.GPUs) > 0 {
		b = append(b, `,"gpus":[`...)
		for i, g := range e.GPUs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(g), 10)
		}
		b = append(b, ']')
	}
	b = appendIntField(b, "wave", int64(e.Wave))
	b = appendStringField(b, "class", e.Class)
	if e.Left {
		b = append(b, `,"left_running":true`...)
	}
	b = appendStringField(b, "on_interrupt", e.OnInterrupt)
	b = appendStringField(b, "message", e.Message)
	b = appendStringField(b, "status", e.Status)
	b = appendFloatField(b, "duration_s", e.Duration)
	b = appendFloatField(b, "peak_rss_mib", e.PeakRSS)
	b = appendFloatField(b, "peak_gpu_mib", e.PeakGPU)
	b = appendFloatField(b, "queued_s", e.Queued)
	b = appendStringsField(b, "logs", e.Logs)
	b = appendIntField(b, "count", int64(e.Count))
	b = appendStringField(b, "item", e.Item)
	b = appendIntField(b, "replica", int64(e.Replica))
	b = appendIntField(b, "port", int64(e.Port))
	b = appendStringField(b, "endpoint", e.Endpoint)
	if len(e.Counts) > 0 {
		b = append(b, `,"counts":{`...)
		for i, k := range slices.Sorted(maps.Keys(e.Counts)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(e.Counts[k]), 10)
		}
		b = append(b, '}')
	}
	b = appendStringField(b, "run_id", e.RunID)
	b = appendStringField(b, "pipeline", e.Pipeline)
	b = appendStringsField(b, "args", e.Args)
	b = appendStringsField(b, "rerun", e.Rerun)
	b = appendStringField(b, "host", e.Host)
	b = appendStringField(b, "dir", e.Dir)
	b = appendStringField(b, "version", e.Version)
	b = appendStringsField(b, "reasons", e.Reasons)
	b = appendStringsField(b, "waits", e.Waits)
	return append(b, '}'), nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// The fields below are left out when empty (omitempty).

func appendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	b = append(append(append(b, ",\""...), name...), "\":"...)
	return appendJSONString(b, s)
}

func appendIntField(b []byte, name string, n int64) []byte {
	if n == 0 {
		return b
	}
	b = append(append(append(b, ",\""...), name...), "\":"...)
	return strconv.AppendInt(b, n, 10)
}

func appendStringsField(b []byte, name string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(append(append(b, ",\""...), name...), "\":["...)
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendFloatField writes the field name: f, f as encoding/json does
// (jsonwrite.Float), and nothing when f is 0.
func appendFloatField(b []byte, name string, f float64) []byte {
	if f == 0 {
		return b
	}
	b = append(append(append(b, ",\""...), name...), "\":"...)
	return jsonwrite.Float(b, f)
}
