package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/process"
)

// A serve stage under a cluster executor (--executor slurm) runs each
// replica as a job of its own, on a machine cairn does not know before the
// job starts. The job's command is servePrelude: on the machine the
// cluster gave it, it takes the first free port of the replica's series,
// writes the replica's host and port to its endpoint file (beside its logs,
// in the run's folder, on the shared filesystem), and execs the server with
// {port} and {host} replaced. cairn reads the endpoint file and proves the
// replica ready there. The command line is the same in every apply (the
// port is chosen on the node), so that an apply after a crash re-attaches
// to the job a dead one left (the cluster executor matches jobs by their
// command, folder and node key): the endpoint file is then the dead run's,
// found beside the job's logs.

// servePrelude is the job's script: $1 the first port, $2 the step between
// the replica's candidate ports (the replica count, so that two replicas
// on one machine never take the same port), then the server's argv.
const servePrelude = `first=$1; step=$2; shift 2
# A port is in use when a socket listens on it (/proc/net/tcp, tcp6: state 0A).
in_use() {
	awk -v p="$(printf '%04X' "$1")" 'FNR > 1 { split($2, a, ":"); if (a[2] == p && $4 == "0A") f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
host=$(hostname)
port=$first
while in_use "$port"; do
	echo "cairn: port $port is in use on $host: skipped" >&2
	port=$((port + step))
	if [ "$port" -gt 65535 ] || [ $((port - first)) -gt $((1024 * step)) ]; then
		echo "cairn: no free port from $first on $host" >&2
		exit 98
	fi
done
f=$CAIRN_SERVE_ENDPOINT_FILE
printf '{"host":"%s","port":%s,"job":"%s"}\n' "$host" "$port" "${SLURM_JOB_ID:-}" >"$f.tmp.$$" && mv -f -- "$f.tmp.$$" "$f"
export CAIRN_SERVE_PORT=$port CAIRN_SERVE_HOST=$host
args=()
for a in "$@"; do
	a=${a//"{port}"/$port}
	args+=("${a//"{host}"/$host}")
done
echo "cairn: serving on $host:$port" >&2
exec "${args[@]}"
`

// remoteExecutor reports whether rt's processes run as cluster jobs (not
// on this machine).
func remoteExecutor(rt Runtime) bool {
	ws, ok := rt.(WorkerStarter)
	if !ok {
		return false
	}
	n, ok := ws.WorkerLauncher().(interface{ Name() string })
	return ok && n.Name() != "local"
}

// endpointFile is where a replica's job writes its host and port: beside
// its standard output log.
func endpointFile(stdout string) string {
	return strings.TrimSuffix(stdout, filepath.Ext(stdout)) + ".endpoint"
}

// remoteEndpoint is what a replica's job wrote.
type remoteEndpoint struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	Job  string `json:"job"`
}

// readEndpoint reads path; ok is false while there is none.
func readEndpoint(path string) (remoteEndpoint, bool) {
	if f, err := os.Open(filepath.Dir(path)); err == nil {
		// A network filesystem shows a file another machine renamed
		// into the folder once the folder is read again.
		_, _ = f.Readdirnames(-1)
		_ = f.Close()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return remoteEndpoint{}, false
	}
	var e remoteEndpoint
	if json.Unmarshal(b, &e) != nil || e.Host == "" || e.Port <= 0 {
		return remoteEndpoint{}, false
	}
	return e, true
}

// awaitEndpoint waits for r's job to write its endpoint file, and sets r's
// port and URL from it (before they are published: a restarted replica
// must come back where it was). The job's wait in the cluster's queue has
// no bound here: start_timeout counts from its start. A wait seen in the
// queue is journaled (queued), and so is the job's start after it
// (running). A job that runs and shows no endpoint file within
// start_timeout fails the replica.
func (sv *server) awaitEndpoint(ctx context.Context, r *replica) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var queuedAt time.Time
	var ran <-chan time.Time
	state := ""
	for {
		sv.mu.Lock()
		path, job, queue := r.endpoint, r.job, r.queue
		sv.mu.Unlock()
		if path != "" {
			if e, ok := readEndpoint(path); ok {
				url := fmt.Sprintf("http://%s/v1", net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
				if r.url != "" && url != r.url {
					// A restarted replica elsewhere: its consumers
					// have the URL published at the start.
					return fmt.Errorf("its job came back at %s, not at %s, where its consumers send their requests", url, r.url)
				}
				r.port, r.url = e.Port, url
				if !queuedAt.IsZero() {
					sv.host.ServeEvent(ServeEvent{Status: "running", Replica: r.i, Port: e.Port,
						Message: fmt.Sprintf("replica %d: %s runs on %s after %s in the queue", r.i, job, e.Host, time.Since(queuedAt).Round(time.Second))})
				}
				return nil
			}
			if queue != nil {
				var queued bool
				state, queued = queue()
				switch {
				case queued && queuedAt.IsZero():
					queuedAt = time.Now()
					sv.host.ServeEvent(ServeEvent{Status: "queued", Replica: r.i,
						Message: fmt.Sprintf("replica %d: %s is queued, %s; its consumers wait (start_timeout counts from its start)", r.i, job, state)})
				case !queued && state != "" && ran == nil:
					t := time.NewTimer(sv.s.startTimeout)
					defer t.Stop()
					ran = t.C
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.exited:
			return fmt.Errorf("its job ended before it wrote its endpoint file (%s)", sv.exitText(r))
		case <-ran:
			return fmt.Errorf("its job runs (%s) but its endpoint file %s did not show within start_timeout %s: the run's folder must be on a filesystem the cluster's machines share", state, path, sv.s.startTimeout)
		case <-tick.C:
		}
	}
}

// remoteProc makes p r's cluster job: the prelude, the first port of r's
// series and the step (the replica count), then the server's argv with
// {port} and {host} left for the prelude; the endpoint file in its
// environment, and where it is noted once the job is known.
func (sv *server) remoteProc(r *replica, p *Proc) {
	rep := strings.NewReplacer("{replica}", strconv.Itoa(r.i),
		"{model}", sv.s.model, "{gpus}", strconv.Itoa(max(len(r.gpus), 1)))
	argv := []string{"/bin/bash", "-c", servePrelude, "cairn-serve", strconv.Itoa(sv.s.port + r.i - 1), strconv.Itoa(sv.count)}
	for _, a := range sv.s.argv {
		argv = append(argv, rep.Replace(a))
	}
	p.Argv = argv
	file := endpointFile(r.out)
	_ = os.Remove(file)
	p.Env["CAIRN_SERVE_ENDPOINT_FILE"] = file
	sv.mu.Lock()
	r.endpoint, r.job, r.queue = "", "", nil
	sv.mu.Unlock()
	p.Started = func(ref process.JobRef) {
		// A job re-attached to writes beside the dead run's logs.
		stdout := r.out
		if d := ref.Details["stdout"]; d != "" {
			stdout = d
		}
		sv.mu.Lock()
		r.endpoint = endpointFile(stdout)
		r.job = ref.Executor + " job " + ref.ID
		sv.mu.Unlock()
	}
	p.Submitted = func(queue func() (string, bool)) {
		sv.mu.Lock()
		r.queue = queue
		sv.mu.Unlock()
	}
}
