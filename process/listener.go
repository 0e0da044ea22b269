package process

import "github.com/cairn-run/cairn/engine/sysproc"

// ForeignListener names the process listening on TCP port when it is
// none of process group pgid's, "" when it is the group's own, nothing
// listens, or the system cannot tell (sysproc.ForeignListener): a server's
// replica is ready only when what answers on its port is its own.
func ForeignListener(port, pgid int) string { return sysproc.ForeignListener(port, pgid) }
