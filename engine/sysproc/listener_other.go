//go:build !linux

package sysproc

// ForeignListener names the process listening on TCP port when it is
// not process group pgid's. Elsewhere than Linux there is no /proc to
// tell: it is always "", and a server answering on the port is taken to
// be the group's.
func ForeignListener(port, pgid int) string { return "" }
