// Command gen writes a benchmark workspace: a cairn pipeline of N trivial
// nodes and the same graph as a build.ninja, a Makefile and a Snakefile, so
// that `cairn plan`/`apply` can be timed against `ninja`, `make` and
// `snakemake` doing exactly the same work.
//
//	go run ./bench/gen -n 1000 -out /tmp/bench1k
//	go run ./bench/gen -shape layered -n 1000 -out /tmp/layered1k
//
// -shape picks the graph. The default, "mixed", mixes the two shapes real
// pipelines have:
//
//   - distinct stage blocks d0..dD (no for_each), chained ten at a time:
//     d(i) runs after d(i-1) unless i is a multiple of ten;
//   - chains of for_each stages c<C>_s0..c<C>_s3, each over the same K keys;
//     c<C>_s<L>["k"] runs after c<C>_s<L-1>["k"] (stage.prev[each.key]), and
//     c<C>_s0 runs after one of the distinct stages;
//   - one fan-in stage per chain, c<C>_all, after every instance of the
//     chain's last stage.
//
// Every node is `touch out/<name>` and declares out/<name> as its output.
// The other shapes stress one thing each. Every node of them is one
// `sh -c "echo NAME > out/NAME"` (ninja and make run the same command
// through /bin/sh), so that every output has content of its own:
//
//   - layered: 4 for_each stages l0..l3 over N/4 keys; l<i>["k"] runs after
//     l<i-1>["k"] (after = [stage.l<i-1>[each.key]]);
//   - chain: N distinct stages c0..c<N-1>, each after the one before: no
//     two nodes can run at once;
//   - grid: the layered graph, its keys made as ML grids make them:
//     toset([for p in setproduct(range(R), range(50)) : tostring(p[0] * 50 + p[1])])
//     (N a multiple of 200);
//   - fan: one stage src, a for_each stage w over N-2 keys each after src
//     (fan-out), and one stage all after every instance of w (fan-in).
//
// The workspace gets an empty out/ folder (make and `touch` do not create
// it; ninja and snakemake would).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	keysPerStage  = 50 // K: for_each keys of each chained stage
	stagesInChain = 4  // L: for_each stages in a chain
	chainNodes    = keysPerStage*stagesInChain + 1
)

// node is one unit of work: its output name (under out/) and the outputs
// it needs.
type node struct {
	out  string
	deps []string
}

// shape is the generated graph, stage by stage.
type shape struct {
	keys     []string
	distinct int // number of distinct stages d0..
	chains   int
}

func newShape(n int) shape {
	s := shape{}
	for i := 0; i < keysPerStage; i++ {
		s.keys = append(s.keys, fmt.Sprintf("k%02d", i))
	}
	s.chains = n * 9 / 10 / chainNodes
	s.distinct = n - s.chains*chainNodes
	if s.distinct < 1 {
		s.chains = (n - 1) / chainNodes
		s.distinct = n - s.chains*chainNodes
	}
	return s
}

func dName(i int) string       { return fmt.Sprintf("d%d", i) }
func cName(c, l int) string    { return fmt.Sprintf("c%d_s%d", c, l) }
func fanName(c int) string     { return fmt.Sprintf("c%d_all", c) }
func dDep(s shape, i int) bool { return i%10 != 0 }

// chainRoot is the distinct stage a chain's first stage runs after.
func chainRoot(s shape, c int) int { return (c * 10) % s.distinct }

// nodes lists every node in a topological order.
func (s shape) nodes() []node {
	var out []node
	for i := 0; i < s.distinct; i++ {
		nd := node{out: dName(i)}
		if dDep(s, i) {
			nd.deps = []string{dName(i - 1)}
		}
		out = append(out, nd)
	}
	for c := 0; c < s.chains; c++ {
		for l := 0; l < stagesInChain; l++ {
			for _, k := range s.keys {
				nd := node{out: cName(c, l) + "_" + k}
				if l == 0 {
					nd.deps = []string{dName(chainRoot(s, c))}
				} else {
					nd.deps = []string{cName(c, l-1) + "_" + k}
				}
				out = append(out, nd)
			}
		}
		fan := node{out: fanName(c)}
		for _, k := range s.keys {
			fan.deps = append(fan.deps, cName(c, stagesInChain-1)+"_"+k)
		}
		out = append(out, fan)
	}
	return out
}

func writeCairn(w *bufio.Writer, s shape) {
	fmt.Fprintf(w, "pipeline \"bench\" {\n  description = \"generated benchmark graph: %d nodes\"\n}\n\n", s.distinct+s.chains*chainNodes)
	fmt.Fprintf(w, "locals {\n  keys = [%s]\n}\n", quoteList(s.keys))
	for i := 0; i < s.distinct; i++ {
		name := dName(i)
		fmt.Fprintf(w, "\nstage \"command\" %q {\n", name)
		fmt.Fprintf(w, "  run     = [\"touch\", \"out/%s\"]\n", name)
		fmt.Fprintf(w, "  outputs = [\"out/%s\"]\n", name)
		if dDep(s, i) {
			fmt.Fprintf(w, "  after   = [stage.%s]\n", dName(i-1))
		}
		w.WriteString("}\n")
	}
	for c := 0; c < s.chains; c++ {
		for l := 0; l < stagesInChain; l++ {
			name := cName(c, l)
			fmt.Fprintf(w, "\nstage \"command\" %q {\n", name)
			w.WriteString("  for_each = local.keys\n")
			fmt.Fprintf(w, "  run      = [\"touch\", \"out/%s_${each.key}\"]\n", name)
			fmt.Fprintf(w, "  outputs  = [\"out/%s_${each.key}\"]\n", name)
			if l == 0 {
				fmt.Fprintf(w, "  after    = [stage.%s]\n", dName(chainRoot(s, c)))
			} else {
				fmt.Fprintf(w, "  after    = [stage.%s[each.key]]\n", cName(c, l-1))
			}
			w.WriteString("}\n")
		}
		name := fanName(c)
		fmt.Fprintf(w, "\nstage \"command\" %q {\n", name)
		fmt.Fprintf(w, "  run     = [\"touch\", \"out/%s\"]\n", name)
		fmt.Fprintf(w, "  outputs = [\"out/%s\"]\n", name)
		fmt.Fprintf(w, "  after   = [stage.%s]\n", cName(c, stagesInChain-1))
		w.WriteString("}\n")
	}
}

func writeNinja(w *bufio.Writer, s shape) {
	w.WriteString("rule touch\n  command = touch $out\n\n")
	var all []string
	for _, nd := range s.nodes() {
		fmt.Fprintf(w, "build out/%s: touch", nd.out)
		for _, d := range nd.deps {
			fmt.Fprintf(w, " out/%s", d)
		}
		w.WriteByte('\n')
		all = append(all, "out/"+nd.out)
	}
	fmt.Fprintf(w, "\nbuild all: phony %s\ndefault all\n", strings.Join(all, " "))
}

func writeMake(w *bufio.Writer, s shape) {
	ns := s.nodes()
	w.WriteString(".PHONY: all\nall:")
	for _, nd := range ns {
		fmt.Fprintf(w, " out/%s", nd.out)
	}
	w.WriteString("\n\n")
	for _, nd := range ns {
		fmt.Fprintf(w, "out/%s:", nd.out)
		for _, d := range nd.deps {
			fmt.Fprintf(w, " out/%s", d)
		}
		w.WriteString("\n\ttouch $@\n")
	}
}

// writeSnake writes one rule per distinct stage and one wildcard rule per
// for_each stage, the way a Snakefile would say it.
func writeSnake(w *bufio.Writer, s shape) {
	w.WriteString("KEYS = [" + quoteList(s.keys) + "]\n\n")
	w.WriteString("rule all:\n    input:\n")
	for i := 0; i < s.distinct; i++ {
		fmt.Fprintf(w, "        \"out/%s\",\n", dName(i))
	}
	for c := 0; c < s.chains; c++ {
		fmt.Fprintf(w, "        \"out/%s\",\n", fanName(c))
	}
	// Outputs of distinct stages end in a digit and chain outputs in a key:
	// constrain wildcards so that rules never overlap.
	w.WriteString("\nwildcard_constraints:\n    k=\"k[0-9]+\"\n")
	for i := 0; i < s.distinct; i++ {
		fmt.Fprintf(w, "\nrule %s:\n", dName(i))
		if dDep(s, i) {
			fmt.Fprintf(w, "    input: \"out/%s\"\n", dName(i-1))
		}
		fmt.Fprintf(w, "    output: \"out/%s\"\n    shell: \"touch {output}\"\n", dName(i))
	}
	for c := 0; c < s.chains; c++ {
		for l := 0; l < stagesInChain; l++ {
			name := cName(c, l)
			fmt.Fprintf(w, "\nrule %s:\n", name)
			if l == 0 {
				fmt.Fprintf(w, "    input: \"out/%s\"\n", dName(chainRoot(s, c)))
			} else {
				fmt.Fprintf(w, "    input: \"out/%s_{k}\"\n", cName(c, l-1))
			}
			fmt.Fprintf(w, "    output: \"out/%s_{k}\"\n    shell: \"touch {output}\"\n", name)
		}
		fmt.Fprintf(w, "\nrule %s:\n", fanName(c))
		fmt.Fprintf(w, "    input: expand(\"out/%s_{k}\", k=KEYS)\n", cName(c, stagesInChain-1))
		fmt.Fprintf(w, "    output: \"out/%s\"\n    shell: \"touch {output}\"\n", fanName(c))
	}
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

func writeFile(path string, fill func(*bufio.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fill(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type genFile struct {
	name string
	fill func(*bufio.Writer)
}

func main() {
	n := flag.Int("n", 1000, "number of nodes")
	out := flag.String("out", "", "workspace folder to write (created)")
	shapeName := flag.String("shape", "mixed", "graph shape: mixed, layered, grid, chain or fan")
	flag.Parse()
	if *out == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: gen [-shape mixed|layered|grid|chain|fan] -n NODES -out DIR")
		os.Exit(2)
	}
	var files []genFile
	var summary string
	switch *shapeName {
	case "mixed":
		s := newShape(*n)
		files = []genFile{
			{"pipeline.hcl", func(w *bufio.Writer) { writeCairn(w, s) }},
			{"build.ninja", func(w *bufio.Writer) { writeNinja(w, s) }},
			{"Makefile", func(w *bufio.Writer) { writeMake(w, s) }},
			{"Snakefile", func(w *bufio.Writer) { writeSnake(w, s) }},
		}
		summary = fmt.Sprintf("%d nodes (%d distinct stages, %d chains of %d for_each stages x %d keys + fan-in)",
			s.distinct+s.chains*chainNodes, s.distinct, s.chains, stagesInChain, keysPerStage)
	case "layered", "grid", "chain", "fan":
		g, err := newEchoGraph(*shapeName, *n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(2)
		}
		files = []genFile{
			{"pipeline.hcl", g.writeCairn},
			{"build.ninja", g.writeNinja},
			{"Makefile", g.writeMake},
		}
		summary = fmt.Sprintf("%d nodes, %s", len(g.nodes), g.about)
	default:
		fmt.Fprintf(os.Stderr, "gen: unknown shape %q: use mixed, layered, grid, chain or fan\n", *shapeName)
		os.Exit(2)
	}
	if err := os.MkdirAll(filepath.Join(*out, "out"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(*out, f.name), f.fill); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("%s: %s\n", *out, summary)
}
