// Package sysproc holds the attributes of the processes cairn starts: a
// process group of their own (so that a kill reaches everything they
// started), and, where the system offers it (Linux), SIGKILL when the
// thread that started them dies; and, on Linux, the guard that ends a
// process's whole group once cairn has ended (Guarded).
package sysproc
