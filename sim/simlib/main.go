package simlib

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Main runs the simulated program as a process and exits with its status.
// SIGTERM and SIGINT end a run (a hanging one included): the run is logged to
// $SIM_RUN_LOG and the signal is re-raised with its default action, so the
// parent sees a death by signal, as with a real Python tool.
func Main(program string) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sigs
		cancel(&SignalError{Signal: s.(syscall.Signal)})
	}()
	out := Run(ctx, program, Env{
		Args:          os.Args[1:],
		Stdout:        os.Stdout,
		Stderr:        os.Stderr,
		Getenv:        os.Getenv,
		Now:           time.Now,
		Pid:           os.Getpid(),
		IgnoreSIGTERM: func() { signal.Ignore(syscall.SIGTERM) },
	})
	if out.Signal != 0 {
		signal.Reset(out.Signal)
		_ = syscall.Kill(os.Getpid(), out.Signal)
		time.Sleep(time.Second) // the signal normally ends the process here
	}
	os.Exit(out.Code)
}
