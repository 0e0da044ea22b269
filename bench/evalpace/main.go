// Command evalpace is bench/evalpace.sh's helper: the anchors and the
// programs an evaluation at the server's pace is measured with.
//
//	evalpace client -endpoint URL -model M -n N -c C [-batch B]
//	    the minimal client: N chat completions of the same shape as the
//	    workers' (bench/evalpace.sh's items), C at a time, over kept-alive
//	    connections; prints the seconds from the first request to the last
//	    answer. What the server allows, measured in the same run. With
//	    -batch, in batches of B, each once every reply of the last is in:
//	    what the server allows a rollout method that waits for each reply.
//	evalpace worker
//	    an evaluation worker in Go (docs/worker-protocol.md): up to
//	    CAIRN_MAX_IN_FLIGHT goroutines, each answering one request at a
//	    time over its kept-alive connection.
//	evalpace method -n N -batch B -out FILE
//	    an optimizer method (docs/rollout-protocol.md) that asks for N
//	    rollouts of the seed bundle, B items a request, and writes to FILE
//	    the seconds from its first request to its last reply and the
//	    rollouts charged; it proposes no incumbent.
//	evalpace items -n N
//	    writes N items (JSON lines) on stdout.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: evalpace client|worker|method|items [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "client":
		err = client(os.Args[2:])
	case "worker":
		err = worker()
	case "method":
		err = method(os.Args[2:])
	case "items":
		err = items(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "evalpace:", err)
		os.Exit(1)
	}
}

// question is item i's question; its answer is 2i+1.
func question(i int) string { return fmt.Sprintf("What is %d + %d?", i, i+1) }

func items(args []string) error {
	fs := flag.NewFlagSet("items", flag.ExitOnError)
	n := fs.Int("n", 1000, "items")
	fs.Parse(args)
	bw := bufio.NewWriter(os.Stdout)
	for i := range *n {
		fmt.Fprintf(bw, `{"id":"q%d","question":%q,"answer":"%d"}`+"\n", i, question(i), 2*i+1)
	}
	return bw.Flush()
}

func httpClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
	}, Timeout: 10 * time.Minute}
}

type chatReply struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// ask posts one chat completion and returns the answer.
func ask(c *http.Client, endpoint, model, q string) (string, int, error) {
	body, _ := json.Marshal(map[string]any{"model": model, "temperature": 0,
		"messages": []map[string]string{{"role": "user", "content": q}}})
	resp, err := c.Post(strings.TrimRight(endpoint, "/")+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	var r chatReply
	if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) == 0 {
		return "", resp.StatusCode, fmt.Errorf("a reply without a choice: %.200s", b)
	}
	return r.Choices[0].Message.Content, resp.StatusCode, nil
}

func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	endpoint := fs.String("endpoint", "", "base URL (…/v1)")
	model := fs.String("model", "sim-model", "model id")
	n := fs.Int("n", 1000, "requests")
	c := fs.Int("c", 64, "requests at a time")
	batch := fs.Int("batch", 0, "requests a batch: each batch starts once every reply of the one before is in (0: no batches)")
	fs.Parse(args)
	hc := httpClient(*c)
	size := *n
	if *batch > 0 {
		size = *batch
	}
	start := time.Now()
	for lo := 0; lo < *n; lo += size {
		if err := clientBatch(hc, *endpoint, *model, lo, min(lo+size, *n), *c); err != nil {
			return err
		}
	}
	fmt.Printf("%.4f\n", time.Since(start).Seconds())
	return nil
}

// clientBatch asks items lo to hi-1, c at a time.
func clientBatch(hc *http.Client, endpoint, model string, lo, hi, c int) error {
	next := make(chan int, hi-lo)
	for i := lo; i < hi; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	errs := make(chan error, c)
	for range c {
		wg.Go(func() {
			for i := range next {
				if _, _, err := ask(hc, endpoint, model, question(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func worker() error {
	// EVALPACE_CPUPROFILE=FILE: the worker's CPU profile (go tool pprof).
	if p := os.Getenv("EVALPACE_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	conns, _ := strconv.Atoi(os.Getenv("CAIRN_MAX_IN_FLIGHT"))
	hc := httpClient(max(conns, 1))
	// EVALPACE_TRACE=FILE: a line per request read ("r SECONDS") and per
	// answer written ("w SECONDS"): how many of CAIRN_MAX_IN_FLIGHT slots
	// the worker holds over time, against the server's request log.
	var trace func(kind byte)
	if p := os.Getenv("EVALPACE_TRACE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		var tmu sync.Mutex
		tw := bufio.NewWriter(f)
		defer func() { tw.Flush(); f.Close() }()
		trace = func(kind byte) {
			tmu.Lock()
			fmt.Fprintf(tw, "%c %.6f\n", kind, float64(time.Now().UnixNano())/1e9)
			tmu.Unlock()
		}
	}
	// One writer: answers that finish together go out in one flush.
	answers := make(chan []byte, 4096)
	wrote := make(chan error, 1)
	go func() {
		out := bufio.NewWriterSize(os.Stdout, 64<<10)
		for b := range answers {
			out.Write(b)
			if len(answers) == 0 {
				out.Flush()
			}
		}
		wrote <- out.Flush()
	}()
	write := func(v answer) {
		b, _ := json.Marshal(v)
		answers <- append(b, '\n')
		if trace != nil {
			trace('w')
		}
	}
	type request struct {
		ID       string `json:"id"`
		Endpoint string `json:"endpoint"`
		Model    string `json:"model"`
		Item     struct {
			Question string `json:"question"`
			Answer   string `json:"answer"`
		} `json:"item"`
	}
	// Requests are answered on up to CAIRN_MAX_IN_FLIGHT goroutines,
	// started one per request until there are that many, each answering
	// one request at a time for the worker's whole life, as the README's
	// worker does with asyncio tasks: a goroutine per request grew a fresh stack
	// through the HTTP client's calls each time, a tenth of the worker's
	// CPU at 1,024 in flight.
	todo := make(chan request, max(conns, 1))
	var wg sync.WaitGroup
	answerer := func() {
		for req := range todo {
			text, code, err := ask(hc, req.Endpoint, req.Model, req.Item.Question)
			switch {
			case err != nil && (code == 0 || code == 429 || code >= 500):
				write(answer{ID: req.ID, InfraFailure: true, Error: err.Error()})
			case err != nil:
				write(answer{ID: req.ID, Score: new(float64), Charged: 1, Error: err.Error()})
			default:
				score := 0.0
				if strings.TrimSpace(text) == req.Item.Answer {
					score = 1
				}
				write(answer{ID: req.ID, Score: &score, Charged: 1, Outputs: &outputs{Answer: text}})
			}
		}
	}
	started := 0
	br := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if trace != nil {
				trace('r')
			}
			var req request
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				fmt.Fprintln(os.Stderr, "bad request:", jerr)
			} else {
				if started < max(conns, 1) {
					started++
					wg.Go(answerer)
				}
				todo <- req
			}
		}
		if err != nil {
			break
		}
	}
	close(todo)
	wg.Wait()
	close(answers)
	return <-wrote
}

// answer is the worker's reply to one request (docs/worker-protocol.md).
type answer struct {
	ID           string   `json:"id"`
	Score        *float64 `json:"score,omitempty"`
	Charged      int      `json:"charged,omitempty"`
	InfraFailure bool     `json:"infra_failure,omitempty"`
	Error        string   `json:"error,omitempty"`
	Outputs      *outputs `json:"outputs,omitempty"`
}

type outputs struct {
	Answer string `json:"answer"`
}

func method(args []string) error {
	fs := flag.NewFlagSet("method", flag.ExitOnError)
	n := fs.Int("n", 1024, "rollouts")
	batch := fs.Int("batch", 256, "items a request")
	outPath := fs.String("out", "", "where the timing goes")
	fs.Parse(args)
	seed := strings.TrimRight(strings.Split(os.Getenv("CAIRN_SEED_BUNDLE"), string(os.PathListSeparator))[0], "/")
	f, err := os.Open(os.Getenv("CAIRN_TRAIN_ITEMS"))
	if err != nil {
		return err
	}
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var it struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &it) == nil && it.ID != "" {
			ids = append(ids, it.ID)
		}
	}
	f.Close()
	conn, err := net.Dial("unix", os.Getenv("CAIRN_ROLLOUT_SOCKET"))
	if err != nil {
		return err
	}
	defer conn.Close()
	rd := bufio.NewReaderSize(conn, 1<<20)
	start := time.Now()
	charged := 0
	for done := 0; done < *n; {
		k := min(*batch, *n-done, len(ids)-done%len(ids))
		req, _ := json.Marshal(map[string]any{"op": "rollout", "bundle": seed, "items": ids[done%len(ids) : done%len(ids)+k]})
		if _, err := conn.Write(append(req, '\n')); err != nil {
			return err
		}
		line, err := rd.ReadBytes('\n')
		if err != nil {
			return err
		}
		var rep struct {
			Results []struct {
				Charged bool `json:"charged"`
			} `json:"results"`
			Error *struct{ Type, Message string } `json:"error"`
		}
		if err := json.Unmarshal(line, &rep); err != nil {
			return err
		}
		if rep.Error != nil {
			return fmt.Errorf("%s: %s", rep.Error.Type, rep.Error.Message)
		}
		for _, r := range rep.Results {
			if r.Charged {
				charged++
			}
		}
		done += k
	}
	took := time.Since(start)
	// The method's record; it proposes no incumbent.
	record := filepath.Join(os.Getenv("CAIRN_OPTIMIZATION_DIR"), "optimizer_result.json")
	if err := os.WriteFile(record, fmt.Appendf(nil, `{"method":"evalpace","rollouts":%d}`+"\n", charged), 0o644); err != nil {
		return err
	}
	if *outPath != "" {
		return os.WriteFile(*outPath, fmt.Appendf(nil, "%.4f %d\n", took.Seconds(), charged), 0o644)
	}
	return nil
}
