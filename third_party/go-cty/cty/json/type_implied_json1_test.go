//go:build !go1.27
// +build !go1.27

package json

const trueAsPropertyNameError = `invalid character 't'`
