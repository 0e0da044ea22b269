package items

import "encoding/binary"

// keyIndex maps item keys to entries. Item keys are sha256 digests: their
// first 8 bytes key a map of small fixed-size slots (the runtime's fast
// path for uint64 keys), pointing into one slice of whole keys and
// entries, which each lookup checks whole. Keys whose first 8 bytes agree
// with another's go to an overflow map by their whole key. A million keys
// load in about half the time a map keyed by the whole key takes.
type keyIndex struct {
	pos      map[uint64]int32
	ents     []indexed
	overflow map[[32]byte]int32
}

func newKeyIndex(n int) *keyIndex {
	return &keyIndex{pos: make(map[uint64]int32, n), ents: make([]indexed, 0, n)}
}

func prefix(kb *[32]byte) uint64 { return binary.LittleEndian.Uint64(kb[:8]) }

// find returns kb's slot in ents, or -1.
func (x *keyIndex) find(kb *[32]byte) int32 {
	i, ok := x.pos[prefix(kb)]
	if !ok {
		return -1
	}
	if x.ents[i].kb == *kb {
		return i
	}
	if j, ok := x.overflow[*kb]; ok {
		return j
	}
	return -1
}

func (x *keyIndex) get(kb [32]byte) (entry, bool) {
	if i := x.find(&kb); i >= 0 {
		return x.ents[i].e, true
	}
	return entry{}, false
}

// add indexes kb with e unless kb has an entry: it returns kb's slot and
// whether it was there already.
func (x *keyIndex) add(kb [32]byte, e entry) (int32, bool) {
	p := prefix(&kb)
	i, ok := x.pos[p]
	if ok {
		if x.ents[i].kb == kb {
			return i, true
		}
		if j, ok := x.overflow[kb]; ok {
			return j, true
		}
	}
	n := int32(len(x.ents))
	x.ents = append(x.ents, indexed{kb, e})
	if !ok {
		x.pos[p] = n
	} else {
		if x.overflow == nil {
			x.overflow = map[[32]byte]int32{}
		}
		x.overflow[kb] = n
	}
	return n, false
}

func (x *keyIndex) len() int { return len(x.ents) }
