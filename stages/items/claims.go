package items

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairn-run/cairn/storage/ofd"
)

// A claim is a one-byte lock at an offset taken from the item key (see
// package ofd), so two keys share a lock only when 62 bits of their
// digests agree; such a collision would only serialize two evaluations,
// never lose one.

// claimShards is the number of claims files. The kernel keeps one list of
// locks per file and walks it on every lock and unlock, so spreading the
// claims over several files keeps each operation short when thousands of
// items are claimed at once.
const claimShards = 64

// Claims excludes other evaluators, in this process or another, from the
// items this one is evaluating. A claim is an open-file-description byte-range
// lock in one of the store's claims files (claims/00 to claims/3f, chosen by
// the key's first byte): the kernel drops it when its holder closes the file
// or dies, so a killed evaluator never leaves an item claimed.
//
// Each Claims value is its own lock owner: two Claims opened on one store
// exclude each other even inside one process. A Claims value is not safe for
// concurrent use.
type Claims struct {
	dir    string
	shards [claimShards]*os.File
}

// OpenClaims opens the claims of the store in dir (the store's directory,
// <cache>/items).
func OpenClaims(dir string) (*Claims, error) {
	cdir := filepath.Join(dir, "claims")
	if err := os.MkdirAll(cdir, 0o777); err != nil {
		return nil, fmt.Errorf("items: open claims: %w", err)
	}
	return &Claims{dir: cdir}, nil
}

// shard returns the open claims file for kb, opening it on first use.
func (c *Claims) shard(kb [32]byte) (*os.File, error) {
	i := int(kb[0]) % claimShards
	if f := c.shards[i]; f != nil {
		return f, nil
	}
	f, err := os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("%02x", i)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("items: open claims: %w", err)
	}
	c.shards[i] = f
	return f, nil
}

// TryClaim takes the claim on key without waiting. It reports false when
// another evaluator holds it. Taking a claim this Claims already holds
// succeeds.
func (c *Claims) TryClaim(key string) (bool, error) {
	kb, err := parseKey(key)
	if err != nil {
		return false, err
	}
	return c.tryClaim(kb)
}

// Release gives the claim on key back.
func (c *Claims) Release(key string) error {
	kb, err := parseKey(key)
	if err != nil {
		return err
	}
	return c.release(kb)
}

// Close releases every claim held through c.
func (c *Claims) Close() error {
	var errs []error
	for i, f := range c.shards {
		if f != nil {
			errs = append(errs, f.Close())
			c.shards[i] = nil
		}
	}
	return errors.Join(errs...)
}

func claimOffset(kb [32]byte) int64 { return ofd.Offset(kb[1:9]) }

func (c *Claims) tryClaim(kb [32]byte) (bool, error) {
	f, err := c.shard(kb)
	if err != nil {
		return false, err
	}
	ok, err := ofd.TryLock(f, claimOffset(kb))
	if err != nil {
		return false, fmt.Errorf("items: claim item: %w", err)
	}
	return ok, nil
}

func (c *Claims) release(kb [32]byte) error {
	f, err := c.shard(kb)
	if err != nil {
		return err
	}
	if err := ofd.Unlock(f, claimOffset(kb)); err != nil {
		return fmt.Errorf("items: release claim: %w", err)
	}
	return nil
}
