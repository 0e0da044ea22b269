package dsl

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// Executor is a pipeline's executor block: where its nodes run. The
// attributes after Name are the Slurm executor's; the local executor has
// none.
type Executor struct {
	Name         string // "local" or "slurm"
	Partition    string
	Account      string
	QOS          string
	ExtraArgs    []string
	MaxSubmitted int
	PollInterval time.Duration
	DeclRange    hcl.Range
	// PartitionRange is where partition is set (its value), when it is.
	PartitionRange hcl.Range
}

var executorSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "partition"}, {Name: "account"}, {Name: "qos"}, {Name: "extra_args"},
		{Name: "max_submitted"}, {Name: "poll_interval"},
	},
}

// decodeExecutor reads `executor "slurm" { ... }` inside the pipeline
// block. Its values are constants: they say where to run, not what.
func decodeExecutor(b *hcl.Block) (*Executor, hcl.Diagnostics) {
	e := &Executor{Name: b.Labels[0], DeclRange: b.DefRange}
	var diags hcl.Diagnostics
	if e.Name != "local" && e.Name != "slurm" {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Unknown executor",
			Detail:   fmt.Sprintf("There is no executor %q: use \"local\" (the default) or \"slurm\".", e.Name),
			Subject:  b.LabelRanges[0].Ptr(),
		}}
	}
	c, d := b.Body.Content(executorSchema)
	diags = append(diags, d...)
	if e.Name == "local" {
		for _, a := range c.Attributes {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("%s is an argument of the slurm executor; the local executor takes none.", a.Name),
				Subject:  a.NameRange.Ptr(),
			})
		}
		return e, diags
	}
	for _, s := range []struct {
		name string
		dst  *string
	}{{"partition", &e.Partition}, {"account", &e.Account}, {"qos", &e.QOS}} {
		if a := c.Attributes[s.name]; a != nil {
			diags = append(diags, decodeLiteral(a, s.dst, s.name, stringLiteral)...)
			if s.name == "partition" {
				e.PartitionRange = a.Expr.Range()
			}
		}
	}
	if a := c.Attributes["extra_args"]; a != nil {
		diags = append(diags, decodeLiteral(a, &e.ExtraArgs, "extra_args", "a list of quoted strings")...)
	}
	if a := c.Attributes["max_submitted"]; a != nil {
		v, d := a.Expr.Value(nil)
		if !d.HasErrors() && (gohcl.DecodeExpression(a.Expr, nil, &e.MaxSubmitted).HasErrors() || e.MaxSubmitted < 1) {
			// A string that is a whole number ("50") converts as for
			// every whole number; what does not is said in these words,
			// not the decoder's (its range is int64's).
			d = hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Invalid max_submitted",
				Detail:   fmt.Sprintf("max_submitted is how many jobs may be in Slurm at once: a whole number, at least 1, not %s.", literalText(v)),
				Subject:  a.Expr.Range().Ptr(),
			}}
		}
		diags = append(diags, d...)
	}
	if a := c.Attributes["poll_interval"]; a != nil {
		var s string
		d := decodeLiteral(a, &s, "poll_interval", `a duration of at least 100ms, such as "5s"`)
		diags = append(diags, d...)
		if !d.HasErrors() {
			iv, err := time.ParseDuration(s)
			if err != nil || iv < 100*time.Millisecond {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid poll_interval",
					Detail:   fmt.Sprintf("poll_interval is a duration of at least 100ms, such as \"5s\", not %q.", s),
					Subject:  a.Expr.Range().Ptr(),
				})
			}
			e.PollInterval = iv
		}
	}
	return e, diags
}
