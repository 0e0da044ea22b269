package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// checkChdir refuses (exit 2) a --chdir that names no folder, before a
// command looks for a pipeline, a cache or a file there.
func (a *app) checkChdir() error {
	if a.chdir == "" {
		return nil
	}
	fi, err := os.Stat(a.chdir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return badInput("--chdir %s: no such folder; give the workspace's folder", a.chdir)
	case err != nil:
		return badInput("--chdir %s: %s", a.chdir, errCause(err))
	case !fi.IsDir():
		return badInput("--chdir %s is a file, not a folder; give the workspace's folder", a.chdir)
	}
	return nil
}

// cacheSource names the cache folder and where it comes from, for
// messages: the flag, the environment variable, or the default.
func (a *app) cacheSource() string {
	switch {
	case a.cacheDir != "":
		return "--cache " + a.cacheDir
	case os.Getenv("CAIRN_CACHE") != "":
		return "CAIRN_CACHE=" + os.Getenv("CAIRN_CACHE")
	}
	return "the cache folder " + a.cachePath() + " (the workspace's default)"
}

// checkCacheFolder refuses (exit 2) a cache path that names something
// other than a folder; a missing one is fine (it is made when needed).
func (a *app) checkCacheFolder() error {
	fi, err := os.Stat(a.cachePath())
	switch {
	case err == nil && !fi.IsDir():
		return badInput("%s is a file, not a folder: give a folder (it is created when missing)", a.cacheSource())
	case errors.Is(err, syscall.ENOTDIR):
		return badInput("%s is below a file, not a folder: give a folder (it is created when missing)", a.cacheSource())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return a.cacheError("open the cache", err)
	}
	return nil
}

// cacheError is err, met in the cache folder while trying to do what,
// for people: what went wrong, without internal prefixes or temporary
// file names, and what to do, which depends on the cause (permissions or
// a full disk); nil for nil.
func (a *app) cacheError(what string, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	switch {
	case notWritable(err):
		return fmt.Errorf("cannot %s (%s): you may not write in %s; check the folder's owner and group (docs/durability.md, \"Sharing a cache\": a setgid group folder and umask 002), or give another --cache", what, errCause(err), a.cacheSource())
	case diskFull(err):
		return fmt.Errorf("cannot %s in %s: %s; make room on its disk and run it again", what, a.cacheSource(), errCause(err))
	case errors.Is(err, syscall.ENOTDIR):
		var pe *fs.PathError
		if errors.As(err, &pe) {
			if f := fileInTheWay(pe.Path); f != "" && insideFolder(a.cachePath(), f) {
				return badInput("cannot %s: %s, inside %s, is a file where cairn keeps a folder: move it aside (cairn makes the folder again)", what, f, a.cacheSource())
			}
		}
		return badInput("cannot %s: %s is below a file, not a folder: give a folder (it is created when missing)", what, a.cacheSource())
	}
	return fmt.Errorf("cannot %s: %w", what, err)
}

// fileInTheWay is the first of p and its folders, from the root down,
// that is something other than a folder (ENOTDIR names the path to make
// or open: the file may be that path itself, or a folder above it); ""
// when there is none.
func fileInTheWay(p string) string {
	var chain []string
	for d := filepath.Clean(p); ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if fi, err := os.Stat(chain[i]); err == nil && !fi.IsDir() {
			return chain[i]
		}
	}
	return ""
}

// insideFolder reports whether p is dir or below it (both as given,
// cleaned).
func insideFolder(dir, p string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	return err == nil && filepath.IsLocal(rel)
}

// notWritable reports whether err says a file or folder may not be
// written: its permissions, or a read-only file system.
func notWritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// diskFull reports whether err says the disk or the user's quota is full.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
