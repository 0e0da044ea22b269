package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Job is one node to submit.
type Job struct {
	Node    string   // the node's address, for --comment and messages
	Attempt int      // 1 for the first
	Argv    []string // run as given: no shell unless Shell
	Shell   bool
	Env     []string // the node's complete environment
	Dir     string   // the working folder (on the shared filesystem)
	Stdout  string   // log files (--output, --error)
	Stderr  string
	// AppendLogs: the job adds to the log files (--open-mode=append).
	AppendLogs bool
	// Script and ExitFile are the wrapper's path and the path it writes
	// the exit status to; both on the shared filesystem, usually beside
	// the logs.
	Script   string
	ExitFile string
	GPUs     int
	CPUs     int
	MemMiB   int
	// Timeout is the stage's own: the script sends SIGTERM to the
	// command's process group once it has run this long, SIGKILL
	// KillGrace later, and says so in the exit file. 0: none.
	Timeout   time.Duration
	KillGrace time.Duration
	// TimeLimit is the job's --time, Slurm's outer bound; 0 takes
	// Timeout+KillGrace (rounded up to whole minutes).
	TimeLimit time.Duration
	// Outputs are the node's outputs (absolute paths) whose state the
	// script lists in the exit file when the command ends (see
	// outputsLine); none: no list.
	Outputs []string
	// prelude are shell lines the wrapper runs first: for a task of a job
	// array, which runs in the array's environment, the unset and export
	// lines that make it the node's own.
	prelude string
}

// timeLimit is the job's --time: TimeLimit, else the stage's timeout and
// its kill grace, so that the script's own kill comes first; 0 for none.
func (j *Job) timeLimit() time.Duration {
	if j.TimeLimit > 0 || j.Timeout <= 0 {
		return j.TimeLimit
	}
	return j.Timeout + max(j.KillGrace, 0)
}

// seconds is d for sleep(1): seconds, to the millisecond.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// quote is s as one word for bash.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// wrapper is the batch script for job. It sets its traps first (with a
// time limit of a minute, Slurm's SIGUSR2 may come at once), runs the
// node's argv in its own session, forwards SIGTERM (Slurm's at a cancel or
// the time limit) to it, notes SIGUSR2 (sent 60 s before the time limit) in
// the node's stderr, enforces the stage's timeout as the local executor
// does (a watchdog in its own session: SIGTERM to the command's group at
// the timeout, SIGKILL after the kill grace), and writes the exit status,
// the command's start and end and whether the timeout ended it to the exit
// file, temp file then rename, so that cairn never reads half a file. It
// removes a previous run's exit file when it starts, and notes its run
// (Slurm's restart count) beside it: a requeued job is decided by its last
// run, and an earlier run ending late writes no exit file over it. With
// Outputs, the exit file lists their files as the command left them.
func wrapper(job *Job) string {
	argv := job.Argv
	if job.Shell {
		argv = []string{"/bin/sh", "-c", strings.Join(argv, " ")}
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = quote(a)
	}
	grace := max(job.KillGrace, 0)
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/bash
# cairn's batch script for %s, attempt %d. Slurm runs it; it runs the node's
# command and writes how it ended to the exit file.
child=
watchdog=
term=0
timed_out=0
timeout_ns=%d
# The child's own pid too: until setsid has made its group, the group
# is not there yet.
on_term() {
	term=1
	[ -n "$child" ] && { kill -TERM -- "-$child" 2>/dev/null; kill -TERM "$child" 2>/dev/null; }
}
# SIGUSR1 comes from the watchdog: the command has run for its timeout.
on_timeout() {
	timed_out=1
	echo "cairn: the command ran for its timeout of %s: SIGTERM to it, SIGKILL after %s" >&2
	[ -n "$child" ] && kill -TERM -- "-$child" 2>/dev/null
}
trap on_term TERM INT
trap on_timeout USR1
trap 'echo "cairn: SIGUSR2 from Slurm: the job is near its time limit" >&2' USR2
%sexit_file=%s
tmp="$exit_file.tmp.${SLURM_JOB_ID:-0}.$$"
rm -f -- "$exit_file"
# This run of the job (Slurm counts its requeues), noted beside the exit
# file: a requeued run still ending (its exit file written late, after a
# slow sync) must not write over the exit file of the run after it.
run="${SLURM_RESTART_COUNT:-0}"
run_file="$exit_file.run"
printf '%%s\n' "$run" >"$run_file"
# The start on the clock that stamps files: the modification time of a
# file made now. cairn compares it with the times of the outputs the
# command writes (to tell them from an earlier run's), and those come from
# the kernel's coarse clock (or a file server's), which lags date's by up
# to some milliseconds.
stamp="$exit_file.started.${SLURM_JOB_ID:-0}.$$"
if : >"$stamp" && started=$(date -r "$stamp" +%%s%%N); then :; else started=$(date +%%s%%N); fi
rm -f -- "$stamp"
finish() {
	ended=$(date +%%s%%N)
	[ -n "$watchdog" ] && kill -KILL -- "-$watchdog" 2>/dev/null
	printf 'status=%%s\nterm=%%s\njob=%%s\nrestarts=%%s\nstarted_ns=%%s\nended_ns=%%s\ntimed_out=%%s\ntimeout_ns=%%s\n' \
		"$1" "$term" "${SLURM_JOB_ID:-}" "$run" "$started" "$ended" "$timed_out" "$timeout_ns" >"$tmp" &&
		%ssync -- "$tmp" 2>/dev/null
	latest=$(cat -- "$run_file" 2>/dev/null)
	if [ -n "$latest" ] && [ "$latest" != "$run" ]; then
		rm -f -- "$tmp" # a later run started: its exit file is the job's
	else
		mv -f -- "$tmp" "$exit_file"
	fi
	exit "$1"
}
%scd -- %s || finish 126
setsid -- %s &
child=$!
# A SIGTERM that came before child was set is passed on now.
[ "$term" = 1 ] && { kill -TERM -- "-$child" 2>/dev/null; kill -TERM "$child" 2>/dev/null; }
if [ "$timeout_ns" -gt 0 ]; then
	setsid -- /bin/bash -c 'sleep "$1"; kill -USR1 "$2"; sleep "$3"; kill -KILL -- "-$4"' watchdog %s "$$" %s "$child" </dev/null >/dev/null 2>&1 &
	watchdog=$!
	# Not a job of this shell's: its end (killed by finish) is not
	# reported as "Killed" in the node's stderr, where classify reads.
	disown "$watchdog" 2>/dev/null
fi
while kill -0 "$child" 2>/dev/null; do wait "$child"; done
wait "$child"
finish $?
`, job.Node, job.Attempt, job.Timeout.Nanoseconds(), job.Timeout, grace, job.prelude, quote(job.ExitFile), outputsLine(job), noGPUs(job), quote(job.Dir), strings.Join(words, " "),
		seconds(job.Timeout), seconds(grace))
	return b.String()
}

// noGPUs is the line that gives a job without GPUs an empty
// CUDA_VISIBLE_DEVICES, as the local executor does: unset, CUDA would
// show the process every GPU of its machine, and Slurm drops the empty
// value the job's environment exported. A job with GPUs gets Slurm's.
func noGPUs(job *Job) string {
	if job.GPUs > 0 {
		return ""
	}
	return "export CUDA_VISIBLE_DEVICES=\n"
}

// writeScript writes job's wrapper to job.Script.
func writeScript(job *Job) error {
	if err := os.MkdirAll(filepath.Dir(job.Script), 0o777); err != nil {
		return err
	}
	tmp := job.Script + ".tmp"
	mode := os.FileMode(0o755)
	if job.prelude != "" {
		// It sets the node's environment, secrets too: the user's only.
		mode = 0o700
	}
	if err := os.WriteFile(tmp, []byte(wrapper(job)), mode); err != nil {
		return err
	}
	return os.Rename(tmp, job.Script)
}

// ExitStatus is what the wrapper wrote.
type ExitStatus struct {
	Status   int  // the command's exit status (128+N: killed by signal N)
	Term     bool // the wrapper had a SIGTERM (a cancel or the time limit)
	Job      string
	Restarts int
	// Started is when the script began, before the command, as the
	// filesystem stamps a file made then (the clock of the outputs' times).
	Started time.Time
	// Ended is when the command had ended (zero in a file an older
	// script wrote).
	Ended time.Time
	// TimedOut: the script ended the command at its Timeout.
	TimedOut bool
	Timeout  time.Duration
	// Outputs are the outputs' files as the command left them, by
	// path; nil in a file of a job without outputs to list (or of an
	// older script).
	Outputs map[string]fileSig
	// OutputRoots are the outputs Outputs lists the files of.
	OutputRoots []string
}

// readExit reads an exit file; ok is false when there is none (yet).
func readExit(path string) (ExitStatus, bool, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ExitStatus{}, false, nil
	}
	if err != nil {
		return ExitStatus{}, false, err
	}
	var st ExitStatus
	have := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "status":
			n, err := strconv.Atoi(v)
			if err != nil {
				return st, false, fmt.Errorf("slurm: exit file %s: status %q", path, v)
			}
			st.Status, have = n, true
		case "term":
			st.Term = v == "1"
		case "job":
			st.Job = v
		case "restarts":
			st.Restarts, _ = strconv.Atoi(v)
		case "started_ns":
			if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
				st.Started = time.Unix(0, ns)
			}
		case "ended_ns":
			if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
				st.Ended = time.Unix(0, ns)
			}
		case "timed_out":
			st.TimedOut = v == "1"
		case "timeout_ns":
			if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
				st.Timeout = time.Duration(ns)
			}
		case "output_root":
			st.OutputRoots = append(st.OutputRoots, v)
			if st.Outputs == nil {
				st.Outputs = map[string]fileSig{}
			}
		case "output":
			if path, sig, ok := parseFindLine(v); ok && st.Outputs != nil {
				st.Outputs[path] = sig
			}
		}
	}
	if !have {
		return st, false, fmt.Errorf("slurm: exit file %s has no status", path)
	}
	return st, true, nil
}

// refreshDir makes a network filesystem look at a folder again: opening and
// reading it revalidates the client's cached attributes (NFS's close-to-open
// consistency), so that a file another machine just renamed into it shows.
func refreshDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_, _ = f.Readdirnames(-1)
		_ = f.Close()
	}
}
