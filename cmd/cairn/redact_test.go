package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-run/cairn/dsl"
)

// The command line journaled by apply never holds a sensitive variable's
// value, however the flag is spelled; other variables stay readable.
func TestRedactArgs(t *testing.T) {
	vars := map[string]*dsl.Variable{
		"token": {Name: "token", Sensitive: true},
		"tag":   {Name: "tag"},
	}
	cases := []struct{ in, want []string }{
		{[]string{"apply", "--var", "token=abc", "--var", "tag=x"}, []string{"apply", "--var", "token=(sensitive)", "--var", "tag=x"}},
		{[]string{"apply", "-var", "token=abc"}, []string{"apply", "-var", "token=(sensitive)"}},
		{[]string{"apply", "--var=token=abc=def"}, []string{"apply", "--var=token=(sensitive)"}},
		{[]string{"apply", "-var=token=abc", "-var=tag=y"}, []string{"apply", "-var=token=(sensitive)", "-var=tag=y"}},
		{[]string{"apply", "--var-file", "token=abc"}, []string{"apply", "--var-file", "token=abc"}},
		{[]string{"apply", "--var"}, []string{"apply", "--var"}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, redactArgs(tc.in, vars), "%q", tc.in)
	}
}
