package fsdigest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"sort"
	"strings"
	"sync"
)

// The stat cache file:
//
//	magic    "cairn.statcache.v1\n"
//	count    uvarint
//	paths    uvarint  total length of all paths
//	entries  count times, sorted by path:
//	           prefix  uvarint  bytes shared with the previous path
//	           suffix  uvarint length, then the bytes
//	           size, mtime, ctime         varint
//	           ino, dev, mode, used day   uvarint
//	           digest  32 bytes
//	crc      4 bytes, CRC-32C (Castagnoli) of everything before, little endian
//
// Sorted paths share long prefixes, so 100k entries take a few MB.
const magic = "cairn.statcache.v1\n"

// castagnoli is the CRC-32C table, made on first use (see wal's).
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

var errCorrupt = errors.New("fsdigest: corrupt stat cache")

func encode(entries map[string]entry) []byte {
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	b := make([]byte, 0, len(magic)+len(entries)*80)
	b = append(b, magic...)
	b = binary.AppendUvarint(b, uint64(len(paths)))
	total := 0
	for _, p := range paths {
		total += len(p)
	}
	b = binary.AppendUvarint(b, uint64(total))
	prev := ""
	for _, p := range paths {
		e := entries[p]
		n := commonPrefix(prev, p)
		b = binary.AppendUvarint(b, uint64(n))
		b = binary.AppendUvarint(b, uint64(len(p)-n))
		b = append(b, p[n:]...)
		b = binary.AppendVarint(b, e.key.size)
		b = binary.AppendVarint(b, e.key.mtime)
		b = binary.AppendVarint(b, e.key.ctime)
		b = binary.AppendUvarint(b, e.key.ino)
		b = binary.AppendUvarint(b, e.key.dev)
		b = binary.AppendUvarint(b, uint64(e.key.mode))
		b = binary.AppendUvarint(b, uint64(e.used))
		b = append(b, e.sum[:]...)
		prev = p
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli()))
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func decode(b []byte) (map[string]entry, error) {
	if len(b) < len(magic)+4 || !bytes.HasPrefix(b, []byte(magic)) {
		return nil, errCorrupt
	}
	body, tail := b[:len(b)-4], b[len(b)-4:]
	if crc32.Checksum(body, castagnoli()) != binary.LittleEndian.Uint32(tail) {
		return nil, errCorrupt
	}
	d := decoder{b: body[len(magic):]}
	count := d.uvarint()
	total := d.uvarint()
	if d.err != nil || count > uint64(len(d.b)) {
		return nil, errCorrupt
	}
	m := make(map[string]entry, count)
	// All paths live in one string, cut into keys: one allocation instead
	// of one per entry. The builder never changes bytes it has written, so
	// earlier keys stay valid as it grows; sizing it from the header only
	// saves copies.
	var all strings.Builder
	all.Grow(int(min(total, 64*uint64(len(b)))))
	var prev []byte
	for i := uint64(0); i < count; i++ {
		shared := d.uvarint()
		suffix := d.bytes(d.uvarint())
		if d.err != nil || shared > uint64(len(prev)) {
			return nil, errCorrupt
		}
		prev = append(prev[:shared], suffix...)
		off := all.Len()
		all.Write(prev)
		var e entry
		e.key.size = d.varint()
		e.key.mtime = d.varint()
		e.key.ctime = d.varint()
		e.key.ino = d.uvarint()
		e.key.dev = d.uvarint()
		e.key.mode = uint32(d.uvarint())
		e.used = uint32(d.uvarint())
		copy(e.sum[:], d.bytes(uint64(len(e.sum))))
		if d.err != nil {
			return nil, errCorrupt
		}
		m[all.String()[off:]] = e
	}
	if len(d.b) != 0 || uint64(all.Len()) != total || uint64(len(m)) != count {
		return nil, errCorrupt
	}
	return m, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
