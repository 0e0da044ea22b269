//go:build !linux

package gcpace

const hugePagesSupported = false

func adviseHuge([]byte) {}
