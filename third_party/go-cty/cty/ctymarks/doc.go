// Package ctymarks contains some ancillary types, values, and constants for
// use with mark-related parts of the main cty package.
package ctymarks
