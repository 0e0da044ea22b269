package runreport

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"
)

// traceCols are trace.tsv's columns: Nextflow's trace fields where
// cairn has them (task_id, hash, native_id, name, process, attempt,
// status, submit, start, complete, duration, realtime, peak_rss), then
// cairn's own (queue wait, GPUs and their use, failure class, executor,
// plan reason).
var traceCols = []string{"task_id", "hash", "native_id", "name", "process", "kind", "attempt", "status", "submit", "start", "complete",
	"duration", "realtime", "queue_wait", "peak_rss", "gpus", "wave", "peak_gpu_mem", "gpu_seconds", "class", "executor", "reason"}

// cellSpace keeps a cell on its line and in its column.
var cellSpace = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")

// nextflowStatus is a node attempt's state in Nextflow's words.
var nextflowStatus = map[string]string{"ok": "COMPLETED", "failed": "FAILED", "running": "RUNNING", "interrupted": "ABORTED",
	"cached": "CACHED", "skipped": "SKIPPED", "planned": "PLANNED"}

// WriteTrace writes trace.tsv: one row per node attempt, and one row,
// with attempt "-" and no times, per node without one (cached, skipped,
// or not started: PLANNED, in a run that stopped before it). Times are
// RFC 3339 in UTC, durations seconds, memory MiB; "-" where unknown.
func (r *Report) WriteTrace(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(traceCols, "\t") + "\n")
	id := 0
	row := func(n *Node, t *Attempt, prev *Attempt) {
		id++
		state, attempt, wait := n.State, "-", "-"
		var submit, start, end time.Time
		var rss, gpu, gsec, real float64
		var gpus, wave, class, executor, job = intsText(n.GPUs), n.Wave, n.Class, "", ""
		if t != nil {
			state, attempt = t.State, strconv.Itoa(t.N)
			start, end = t.Start, t.End
			rss, gpu, real = t.PeakRSS, t.PeakGPU, t.Seconds()
			gsec = real * float64(len(t.GPUs))
			gpus, wave, class, executor, job = intsText(t.GPUs), t.Wave, t.Class, t.Executor, t.Job
			if t.N == n.Tries[0].N && n.QueueWait >= 0 {
				wait = num(n.QueueWait)
				submit = start.Add(-time.Duration(n.QueueWait * float64(time.Second)))
			}
			if prev != nil && !prev.End.IsZero() && !start.IsZero() {
				// A later attempt was submitted again when the one
				// before it failed: its wait is the time until it
				// started (a retry's backoff).
				submit, wait = prev.End, num(max(0, start.Sub(prev.End).Seconds()))
			}
			if !t.Submit.IsZero() {
				// A cluster job: submitted by its sbatch, it waited in
				// the queue until it started (submit + queue_wait is
				// its start, as in every row).
				submit, wait = t.Submit, num(t.Queued)
			}
		} else if n.State == "cached" {
			rss, gpu = n.PeakRSS, n.PeakGPU
		}
		dur := "-"
		if !submit.IsZero() && !end.IsZero() {
			dur = num(end.Sub(submit).Seconds())
		}
		cells := []string{strconv.Itoa(id), short(n.Key), dash(job), n.Addr, n.Stage, dash(n.Kind), attempt, nextflowStatus[state],
			stamp(submit), stamp(start), stamp(end), dur, numOrDash(real, t != nil && !end.IsZero()), wait,
			numOrDash(rss, rss > 0), dash(gpus), intOrDash(wave), numOrDash(gpu, gpu > 0), numOrDash(gsec, gsec > 0),
			dash(class), dash(executor), dash(n.Reason)}
		for i, c := range cells {
			cells[i] = cellSpace.Replace(c)
		}
		bw.WriteString(strings.Join(cells, "\t") + "\n")
	}
	for _, n := range r.Nodes {
		if len(n.Tries) == 0 {
			row(n, nil, nil)
			continue
		}
		for i, t := range n.Tries {
			var prev *Attempt
			if i > 0 {
				prev = n.Tries[i-1]
			}
			row(n, t, prev)
		}
	}
	return bw.Flush()
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return dash(key)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func intOrDash(n int) string {
	if n <= 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func numOrDash(x float64, ok bool) string {
	if !ok {
		return "-"
	}
	return num(x)
}
