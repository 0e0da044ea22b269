package ofd

// setLk is the fcntl command that sets an open-file-description lock:
// F_OFD_SETLK in macOS's <sys/fcntl.h>, which golang.org/x/sys/unix does
// not name. Its locks behave as Linux's: owned by the open file
// description, dropped when its last descriptor closes.
const setLk = 90
