// Package items evaluates datasets item by item through the worker protocol
// (docs/worker-protocol.md) and keeps every result in a content-addressed,
// append-only item store shared by every pipeline that uses the same cache.
//
// An item's key depends only on what determines its result: the bundle being
// evaluated, the item's content, the model, the runtime settings and the
// worker's code. It never depends on the optimizer method, the stage or the
// run, so a second pipeline that needs the same evaluation reads it from the
// store instead of asking the model again.
package items

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// KeyVersion names the envelope hashed by ItemKey. It changes whenever the
// envelope's layout changes, so that old keys can never be confused with new
// ones.
const KeyVersion = "cairn.item.v1"

// ItemKey returns the key of one item: the lowercase hex sha256 of this
// envelope, written without any whitespace and with its fields in this order:
//
//	{"v":"cairn.item.v1","bundle":B,"item":I,"model":M,"runtime":R,"worker":W}
//
// B, M and W are JSON strings holding bundleDigest, modelID and workerDigest.
// I is the item's canonical JSON and R the canonical JSON of runtime (an empty
// object when runtime is nil). Canonical JSON has no insignificant whitespace,
// object members sorted by key (byte order), strings re-encoded by Go's JSON
// encoder without HTML escaping, and numbers kept as they were written.
//
// itemJSON must be a single JSON value; it need not be canonical already.
func ItemKey(bundleDigest string, itemJSON json.RawMessage, modelID string, runtime map[string]any, workerDigest string) (string, error) {
	item, err := Canonical(itemJSON)
	if err != nil {
		return "", fmt.Errorf("items: item content: %w", err)
	}
	rt, err := CanonicalRuntime(runtime)
	if err != nil {
		return "", err
	}
	return itemKey(bundleDigest, item, modelID, rt, workerDigest), nil
}

// itemKey hashes the envelope from parts that are already canonical.
func itemKey(bundleDigest string, item []byte, modelID string, runtime []byte, workerDigest string) string {
	kb := newKeyer(bundleDigest, modelID, runtime, workerDigest).sum(nil, item)
	return hex.EncodeToString(kb[:])
}

// keyer hashes the envelopes of many items of one evaluation: what comes
// before and after the item is written once.
type keyer struct {
	prefix, suffix []byte
}

func newKeyer(bundleDigest, modelID string, runtime []byte, workerDigest string) keyer {
	var b bytes.Buffer
	b.WriteString(`{"v":`)
	b.WriteString(strconv.Quote(KeyVersion))
	b.WriteString(`,"bundle":`)
	writeJSONString(&b, bundleDigest)
	b.WriteString(`,"item":`)
	prefix := bytes.Clone(b.Bytes())
	b.Reset()
	b.WriteString(`,"model":`)
	writeJSONString(&b, modelID)
	b.WriteString(`,"runtime":`)
	b.Write(runtime)
	b.WriteString(`,"worker":`)
	writeJSONString(&b, workerDigest)
	b.WriteByte('}')
	return keyer{prefix: prefix, suffix: bytes.Clone(b.Bytes())}
}

// sum is the key of item (canonical JSON), the envelope written in buf
// (reused from call to call: pass back what the last call left in *buf).
func (k keyer) sum(buf *[]byte, item []byte) [32]byte {
	var b []byte
	if buf != nil {
		b = (*buf)[:0]
	}
	b = append(b, k.prefix...)
	b = append(b, item...)
	b = append(b, k.suffix...)
	if buf != nil {
		*buf = b
	}
	return sha256.Sum256(b)
}

// CanonicalRuntime returns the canonical JSON of the runtime settings that
// enter an item key; nil is the empty object.
func CanonicalRuntime(runtime map[string]any) ([]byte, error) {
	if runtime == nil {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(runtime)
	if err != nil {
		return nil, fmt.Errorf("items: runtime settings: %w", err)
	}
	c, err := Canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("items: runtime settings: %w", err)
	}
	return c, nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}
