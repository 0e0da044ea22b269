package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/stages/decision"
)

func (a *app) replayCmd() *cobra.Command {
	var asJSON bool
	var out, expect, matrix string
	cmd := &cobra.Command{
		Use:   "replay PROTOCOL OUTCOMES",
		Short: "Replay a decision protocol's rules over recorded outcomes",
		Long: `Replay the decision rules of a frozen decision protocol (seed 003's
decision_protocol.json) over recorded slot outcomes, offline.

OUTCOMES is a JSON object mapping slot ids to "within_margin",
"above_margin", "memory_failure", "unresolved" or "not_started" (or to
{"state": STATE, "attempts": N} for a slot that took more than one started
attempt); a slot the file leaves out is unresolved. Outcomes that break the
protocol's failure policy (more than one replacement in a slot, more than
resource_cap.max_repair_allocations in all) are refused, naming the slots.

The files the protocol froze (source_files_sha256, data_files_sha256,
implementation_sha256, relative to the protocol's folder) are checked where
they are present, the matrix file against matrix_sha256 with --matrix, and
the protocol itself against --expect-sha256: a file that differs is refused.

For every case, rule and budget: each candidate's decision, approvals, true
approvals, approval errors, candidates within margin, coverage, charged
screen attempts, unavailable screens and unresolved truths, with [min, max]
bounds where truths are unresolved; then the totals over the cases. A table
on standard output (or, with --json, one JSON object), and replay.json and
replay.tsv in --out, each naming the protocol and outcomes files with their
sha256. docs/decision.md describes every figure.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("expect-sha256") && strings.TrimSpace(expect) == "" {
				// "$(cat protocol.sha256)" of a missing file: a check
				// that checks nothing would pass silently.
				return badInput("--expect-sha256 is empty: give the protocol's sha256 as recorded when it was frozen (64 hex digits), or leave the flag out to check no digest")
			}
			if out != "" {
				if err := a.replayOverInput(out, args); err != nil {
					return err
				}
			}
			p, err := decision.ReadProtocol(a.path(args[0]))
			if err != nil {
				return a.replayInputError(err, "protocol", args[0])
			}
			if cmd.Flags().Changed("expect-sha256") {
				if err := p.CheckSHA256(expect); err != nil {
					return a.replayInputError(err, "protocol", args[0])
				}
			}
			frozen, err := p.CheckFrozen(filepath.Dir(a.path(args[0])), a.path(matrix))
			if err != nil {
				return a.replayInputError(err, "frozen", args[0])
			}
			if frozen.Matrix != "" {
				frozen.Matrix = matrix
			}
			o, in, err := decision.ReadOutcomes(a.path(args[1]), p)
			if err != nil {
				return a.replayInputError(err, "outcomes", args[1])
			}
			r := decision.Replay(p, o)
			r.Inputs.Protocol.File = args[0]
			in.File = args[1]
			r.Inputs.Outcomes, r.Inputs.Frozen = in, frozen
			dir := a.path(out)
			if out != "" {
				if err := keptReplay(dir, out, r.JSON()); err != nil {
					return err
				}
				if err := r.WriteFiles(dir, !noFsync()); err != nil {
					// The folder given cannot take the files: a bad
					// --out, as for report, graph and plan.
					return badInput("--out %s: cannot write the replay: %s", out, err)
				}
			}
			if asJSON {
				_, err = a.stdout.Write(r.JSON())
			} else {
				err = r.WriteTable(a.stdout)
			}
			switch {
			case errors.Is(err, syscall.EPIPE):
				// The reader of standard output went away (cairn
				// replay P O | head): it had what it wanted, and the
				// files are written. Nothing to say and no failure,
				// as for the other commands (runErrorsFail).
			case err != nil:
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if out != "" {
				fmt.Fprintf(a.stderr, "Replay written to %s and %s.\n", filepath.Join(out, decision.Files[0]), filepath.Join(out, decision.Files[1]))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object {\"inputs\": ..., case_id: {rule: {budget: metrics}}, \"total\": ...} instead of the table")
	cmd.Flags().StringVar(&out, "out", "replay", "folder for replay.json and replay.tsv (\"\": write no files)")
	cmd.Flags().StringVar(&expect, "expect-sha256", "", "refuse the protocol unless its sha256 is this (hex): the digest recorded when it was frozen")
	cmd.Flags().StringVar(&matrix, "matrix", "", "check this file against the protocol's matrix_sha256 (refused when it differs)")
	return cmd
}

// replayInputError prints every problem of an input file, each with its
// position, and refuses with exit 2.
func (a *app) replayInputError(err error, what, file string) error {
	var es decision.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			fmt.Fprintln(a.stderr, e)
		}
		if what == "frozen" {
			return badInput("%d file(s) differ from what the protocol %s froze; nothing was replayed", len(es), file)
		}
		return badInput("%d problem(s) in the %s file %s; nothing was replayed", len(es), what, file)
	}
	return badInput("%s; nothing was replayed", err)
}

// replayOverInput refuses an --out where the replay would replace one
// of the files it reads: an input (protocol or outcomes) that is, or
// leads through a link or a hard link to, replay.json or replay.tsv in
// out. Written, the input would be gone, and replay.json would name a
// digest no file has any more.
func (a *app) replayOverInput(out string, inputs []string) error {
	for _, name := range decision.Files {
		written, err := os.Stat(filepath.Join(a.path(out), name))
		if err != nil {
			continue // nothing there to replace
		}
		for i, in := range inputs {
			fi, err := os.Stat(a.path(in))
			if err == nil && os.SameFile(fi, written) {
				what, is := [...]string{"protocol", "outcomes"}[i], ""
				if w := filepath.Join(out, name); filepath.Clean(in) != w {
					is = " " + w + ","
				}
				return badInput("the %s file %s is%s one of the files the replay writes (--out %s): a replay never writes over what it reads; give --out another folder, or move the %s file out of it", what, in, is, out, what)
			}
		}
	}
	return nil
}

// keptReplay refuses to write a replay over another one: a folder whose
// replay.json holds another replay (other figures, or other inputs)
// keeps it, and the refusal says what differs; the same replay is
// written again.
func keptReplay(dir, out string, want []byte) error {
	path := filepath.Join(dir, decision.Files[0])
	have, err := os.ReadFile(path)
	if err != nil || bytes.Equal(have, want) {
		return nil
	}
	var in replayInputs
	what, differs := "another replay", ""
	if json.Unmarshal(have, &in) == nil && in.Inputs.Protocol.SHA256 != "" {
		what = fmt.Sprintf("the replay of %s (sha256 %.12s) and %s (sha256 %.12s)", in.Inputs.Protocol.File, in.Inputs.Protocol.SHA256, in.Inputs.Outcomes.File, in.Inputs.Outcomes.SHA256)
		differs = "; this one differs in " + replayDiffers(have, want)
	}
	return badInput("%s holds %s%s: a replay is not written over another. Give --out another folder (or --out \"\" to write none), or remove %s to replace it", filepath.Join(out, decision.Files[0]), what, differs, filepath.Join(out, decision.Files[0]))
}

// replayInputs is what replay.json says of the files a replay read.
type replayInputs struct {
	Inputs struct {
		Protocol, Outcomes struct{ File, SHA256 string }
	} `json:"inputs"`
}

// replayDiffers says what differs between two replay.json files, have
// and want (which differ): the path or sha256 of an input, what was
// checked of the inputs, and whether the figures do. A copy of the
// outcomes file under another name gives the same figures: the refusal
// says the name is what differs, not the figures.
func replayDiffers(have, want []byte) string {
	var h, w replayInputs
	var hm, wm map[string]json.RawMessage
	if json.Unmarshal(have, &h) != nil || json.Unmarshal(want, &w) != nil || json.Unmarshal(have, &hm) != nil || json.Unmarshal(want, &wm) != nil {
		return "its figures"
	}
	var out []string
	for _, f := range []struct {
		what        string
		there, here struct{ File, SHA256 string }
	}{{"protocol", h.Inputs.Protocol, w.Inputs.Protocol}, {"outcomes", h.Inputs.Outcomes, w.Inputs.Outcomes}} {
		if f.there.File != f.here.File {
			out = append(out, fmt.Sprintf("the %s file's path (%s there, %s here)", f.what, f.there.File, f.here.File))
		}
		if f.there.SHA256 != f.here.SHA256 {
			out = append(out, fmt.Sprintf("the %s file's sha256 (%.12s there, %.12s here)", f.what, f.there.SHA256, f.here.SHA256))
		}
	}
	hIn, wIn := otherInputs(hm[decision.InputsKey]), otherInputs(wm[decision.InputsKey])
	if !bytes.Equal(hIn, wIn) {
		out = append(out, "what was checked of its inputs (the frozen files, the slots absent or simulated)")
	}
	delete(hm, decision.InputsKey)
	delete(wm, decision.InputsKey)
	hb, _ := json.Marshal(hm)
	wb, _ := json.Marshal(wm)
	switch figures := !bytes.Equal(hb, wb); {
	case len(out) == 0 && figures:
		return "its figures"
	case len(out) == 0:
		return "the bytes of replay.json alone (the same inputs and figures)"
	case figures:
		return strings.Join(out, ", ") + ", and in its figures"
	}
	return strings.Join(out, ", ") + ", not in its figures"
}

// otherInputs is a replay's inputs object without the protocol and
// outcomes files, compacted, for comparing what was checked of them.
func otherInputs(raw json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "protocol")
	delete(m, "outcomes")
	b, _ := json.Marshal(m)
	return b
}
