package main

import (
	"bufio"
	"fmt"
	"strings"
)

// layeredStages is the number of for_each stages of the layered and grid
// shapes.
const layeredStages = 4

// gridCols is the second range of the grid shape's setproduct.
const gridCols = 50

// echoGraph is a graph of the layered, chain or fan shape: every node is
// `sh -c "echo NAME > out/NAME"`.
type echoGraph struct {
	shape string
	keys  []string // for_each keys (layered, grid, fan)
	// rows and cols make the grid shape's keys: setproduct(range(rows),
	// range(cols)), key r*cols+c.
	rows, cols int
	n          int    // stages of a chain
	nodes      []node // every node, in a topological order
	about      string
}

func newEchoGraph(shape string, n int) (*echoGraph, error) {
	g := &echoGraph{shape: shape}
	keys := func(k int) {
		for i := 0; i < k; i++ {
			g.keys = append(g.keys, fmt.Sprintf("k%d", i))
		}
	}
	switch shape {
	case "layered", "grid":
		if n < layeredStages {
			return nil, fmt.Errorf("the %s shape needs at least %d nodes", shape, layeredStages)
		}
		keys(n / layeredStages)
		if shape == "grid" {
			g.cols = gridCols
			if n%(layeredStages*gridCols) != 0 {
				return nil, fmt.Errorf("the grid shape needs a multiple of %d nodes", layeredStages*gridCols)
			}
			g.rows = n / layeredStages / gridCols
			for i := range g.keys {
				g.keys[i] = fmt.Sprint(i)
			}
		}
		for l := 0; l < layeredStages; l++ {
			for _, k := range g.keys {
				nd := node{out: layerName(l) + "_" + k}
				if l > 0 {
					nd.deps = []string{layerName(l-1) + "_" + k}
				}
				g.nodes = append(g.nodes, nd)
			}
		}
		g.about = fmt.Sprintf("%d for_each stages x %d keys, each instance after the previous stage's same key", layeredStages, len(g.keys))
		if shape == "grid" {
			g.about += fmt.Sprintf(" (the keys a setproduct grid of %d x %d)", g.rows, g.cols)
		}
	case "chain":
		g.n = n
		for i := 0; i < n; i++ {
			nd := node{out: chainName(i)}
			if i > 0 {
				nd.deps = []string{chainName(i - 1)}
			}
			g.nodes = append(g.nodes, nd)
		}
		g.about = fmt.Sprintf("a chain of %d distinct stages", n)
	case "fan":
		if n < 3 {
			return nil, fmt.Errorf("the fan shape needs at least 3 nodes")
		}
		keys(n - 2)
		g.nodes = append(g.nodes, node{out: "src"})
		var all []string
		for _, k := range g.keys {
			g.nodes = append(g.nodes, node{out: "w_" + k, deps: []string{"src"}})
			all = append(all, "w_"+k)
		}
		g.nodes = append(g.nodes, node{out: "all", deps: all})
		g.about = fmt.Sprintf("src, then %d instances of w after it, then all after every one of them", len(g.keys))
	}
	return g, nil
}

func layerName(l int) string { return fmt.Sprintf("l%d", l) }
func chainName(i int) string { return fmt.Sprintf("c%d", i) }

// echoRun is a node's run list: one shell writing its name into its output.
func echoRun(name string) string {
	return fmt.Sprintf(`["sh", "-c", "echo %s > out/%s"]`, name, name)
}

func (g *echoGraph) writeCairn(w *bufio.Writer) {
	fmt.Fprintf(w, "pipeline \"bench\" {\n  description = \"generated benchmark graph (%s): %d nodes\"\n}\n", g.shape, len(g.nodes))
	switch {
	case g.shape == "grid":
		fmt.Fprintf(w, "\nlocals {\n  keys = toset([for p in setproduct(range(%d), range(%d)) : tostring(p[0] * %d + p[1])])\n}\n", g.rows, g.cols, g.cols)
	case len(g.keys) > 0:
		fmt.Fprintf(w, "\nlocals {\n  keys = [%s]\n}\n", quoteList(g.keys))
	}
	distinct := func(name, after string) {
		fmt.Fprintf(w, "\nstage \"command\" %q {\n", name)
		fmt.Fprintf(w, "  run     = %s\n", echoRun(name))
		fmt.Fprintf(w, "  outputs = [\"out/%s\"]\n", name)
		if after != "" {
			fmt.Fprintf(w, "  after   = [%s]\n", after)
		}
		w.WriteString("}\n")
	}
	eachStage := func(name, after string) {
		fmt.Fprintf(w, "\nstage \"command\" %q {\n", name)
		w.WriteString("  for_each = local.keys\n")
		fmt.Fprintf(w, "  run      = %s\n", echoRun(name+"_${each.key}"))
		fmt.Fprintf(w, "  outputs  = [\"out/%s_${each.key}\"]\n", name)
		if after != "" {
			fmt.Fprintf(w, "  after    = [%s]\n", after)
		}
		w.WriteString("}\n")
	}
	switch g.shape {
	case "layered", "grid":
		for l := 0; l < layeredStages; l++ {
			after := ""
			if l > 0 {
				after = fmt.Sprintf("stage.%s[each.key]", layerName(l-1))
			}
			eachStage(layerName(l), after)
		}
	case "chain":
		for i := 0; i < g.n; i++ {
			after := ""
			if i > 0 {
				after = "stage." + chainName(i-1)
			}
			distinct(chainName(i), after)
		}
	case "fan":
		distinct("src", "")
		eachStage("w", "stage.src")
		distinct("all", "stage.w")
	}
}

func (g *echoGraph) writeNinja(w *bufio.Writer) {
	// ninja runs a command through /bin/sh -c, as cairn's run list does.
	w.WriteString("rule echo\n  command = echo $name > $out\n\n")
	var all []string
	for _, nd := range g.nodes {
		fmt.Fprintf(w, "build out/%s: echo", nd.out)
		for _, d := range nd.deps {
			fmt.Fprintf(w, " out/%s", d)
		}
		fmt.Fprintf(w, "\n  name = %s\n", nd.out)
		all = append(all, "out/"+nd.out)
	}
	fmt.Fprintf(w, "\nbuild all: phony %s\ndefault all\n", strings.Join(all, " "))
}

func (g *echoGraph) writeMake(w *bufio.Writer) {
	w.WriteString(".PHONY: all\nall:")
	for _, nd := range g.nodes {
		fmt.Fprintf(w, " out/%s", nd.out)
	}
	w.WriteString("\n\n")
	for _, nd := range g.nodes {
		fmt.Fprintf(w, "out/%s:", nd.out)
		for _, d := range nd.deps {
			fmt.Fprintf(w, " out/%s", d)
		}
		// The redirection makes make run it through /bin/sh -c.
		fmt.Fprintf(w, "\n\techo %s > $@\n", nd.out)
	}
}
