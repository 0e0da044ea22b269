package ofd

import "golang.org/x/sys/unix"

// setLk is the fcntl command that sets an open-file-description lock.
const setLk = unix.F_OFD_SETLK
