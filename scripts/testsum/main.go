// Command testsum reads `go test -json` on stdin and prints what people
// read: each package's result line, the whole output of every test that
// failed (and of packages that failed to build or panicked outside a
// test), and at the end every skipped test with its reason, then one
// line, `N passed, N failed, N skipped`. It exits 1 when anything failed or
// when the input held no test result at all.
//
//	go test -json ./... | go run ./scripts/testsum
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

func main() {
	os.Exit(summarize(os.Stdin, os.Stdout))
}

// summarize copies what matters of the event stream in to out and returns
// the exit status.
func summarize(in io.Reader, out io.Writer) int {
	w := bufio.NewWriter(out)
	defer w.Flush()
	type testID struct{ pkg, test string }
	buf := map[testID][]string{}    // output of tests still running
	pkgOut := map[string][]string{} // package-level output not yet shown
	build := map[string][]string{}  // build output, by import path
	failedIn := map[string]int{}    // failed tests, by package
	var passed, failed, events int
	var skips []string // "pkg Test: reason", in the order they came
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: go vet or the go command itself speaking.
			fmt.Fprintf(w, "%s\n", line)
			w.Flush()
			continue
		}
		events++
		id := testID{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			build[e.ImportPath] = append(build[e.ImportPath], e.Output)
		case e.Action == "build-fail":
			fmt.Fprint(w, strings.Join(build[e.ImportPath], ""))
			delete(build, e.ImportPath)
		case e.Test != "" && e.Action == "output":
			buf[id] = append(buf[id], e.Output)
		case e.Test != "" && e.Action == "pass":
			passed++
			delete(buf, id)
		case e.Test != "" && e.Action == "skip":
			skips = append(skips, e.Package+" "+e.Test+": "+skipReason(buf[id]))
			delete(buf, id)
		case e.Test != "" && e.Action == "fail":
			failed++
			failedIn[e.Package]++
			fmt.Fprint(w, strings.Join(buf[id], ""))
			delete(buf, id)
		case e.Test == "" && e.Action == "output":
			pkgOut[e.Package] = append(pkgOut[e.Package], e.Output)
		case e.Test == "" && (e.Action == "pass" || e.Action == "skip"):
			// The result line ("ok  pkg 1.2s"), not the PASS before it.
			fmt.Fprint(w, lastLine(pkgOut[e.Package]))
			delete(pkgOut, e.Package)
		case e.Test == "" && e.Action == "fail":
			if failedIn[e.Package] == 0 {
				// It failed outside any test (a build failure, a panic
				// in TestMain, a timeout): that is one failure, and its
				// output is all there is to go by.
				failed++
				fmt.Fprint(w, strings.Join(pkgOut[e.Package], ""))
				for t, o := range buf {
					if t.pkg == e.Package {
						fmt.Fprint(w, strings.Join(o, ""))
						delete(buf, t)
					}
				}
			} else {
				fmt.Fprint(w, lastLine(pkgOut[e.Package]))
			}
			delete(pkgOut, e.Package)
		}
		w.Flush()
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(w, "testsum: reading go test -json: %s\n", err)
		failed++
	}
	if events == 0 && failed == 0 {
		fmt.Fprintln(w, "testsum: no test results in the input")
		failed++
	}
	if len(skips) > 0 {
		fmt.Fprintf(w, "skipped:\n")
		for _, s := range skips {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", passed, failed, len(skips))
	if failed > 0 {
		return 1
	}
	return 0
}

// skipReason is what a skipped test said, from its output: the lines
// other than go test's own ("=== RUN", "--- SKIP"), the file:line prefix
// kept, joined by "; ".
func skipReason(lines []string) string {
	var said []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		said = append(said, l)
	}
	if len(said) == 0 {
		return "(no reason given)"
	}
	return strings.Join(said, "; ")
}

// lastLine returns the last of a package's output lines ("" if none).
func lastLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}
