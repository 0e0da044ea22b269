package stages

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Diag returns one error diagnostic at r.
func Diag(summary, detail string, r hcl.Range) hcl.Diagnostics {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
	if r.Filename != "" {
		d.Subject = r.Ptr()
	}
	return hcl.Diagnostics{d}
}

// StringList converts a known list, set or tuple of strings (numbers and
// bools are converted) to a Go slice.
func StringList(v cty.Value) ([]string, error) {
	v, _ = v.UnmarkDeep()
	if v.IsNull() {
		return nil, nil
	}
	ty := v.Type()
	if !(ty.IsListType() || ty.IsSetType() || ty.IsTupleType()) {
		return nil, fmt.Errorf("got %s, not a list", ty.FriendlyName())
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		s, err := convert.Convert(e, cty.String)
		if err != nil || s.IsNull() {
			return nil, fmt.Errorf("element %d is %s, not a string", len(out), e.Type().FriendlyName())
		}
		out = append(out, s.AsString())
	}
	return out, nil
}
