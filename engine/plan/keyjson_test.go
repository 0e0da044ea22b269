package plan

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// envelopeMarshal is json.Marshal's text of e, the bytes a key is the
// digest of before KeyJSON wrote them by hand.
func envelopeMarshal(e *Envelope) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// KeyJSON writes the bytes json.Marshal writes for every envelope, so
// that no key changes: envelopes with nil and empty maps and lists, keys
// and paths that need escaping or are not ASCII, arguments Marshal writes
// as they are and arguments it compacts, escapes or refuses (then
// KeyJSON's text is Marshal's, and its key the digest of nothing, as
// before). Most envelopes of a plan take the hand-written path.
func TestEnvelopeJSONMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 5))
	strs := []string{"", "a", "out/l0_1", "echo a > b", `q"uote`, `back\slash`, "é", "\u2028", "\xff", "<&>", "tab\t", "z"}
	raws := []string{`"a"`, `["sh","-c","echo l0_1 \u003e out/l0_1"]`, `{"a":1,"b":[true,null]}`, `1.5`, `"a b"`,
		`[1, 2]`, `"<"`, "\"\u2028\"", `{"a":`, ``, `null`}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	strMap := func() map[string]string {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string]string{}
		}
		m := map[string]string{}
		for range 1 + r.IntN(4) {
			m[pick(strs)] = pick(strs)
		}
		return m
	}
	handWritten := 0
	for range 20000 {
		e := &Envelope{V: EnvelopeVersion, Kind: pick(strs), KindVersion: r.IntN(5) - 1, Inputs: strMap(), Seal: strMap()}
		if r.IntN(4) > 0 {
			e.Args = map[string]json.RawMessage{}
			for range r.IntN(4) {
				if r.IntN(8) == 0 {
					e.Args[pick(strs)] = nil
				} else {
					e.Args[pick(strs)] = json.RawMessage(pick(raws))
				}
			}
		}
		if r.IntN(4) > 0 {
			e.Upstreams = []string{}
			for range r.IntN(3) {
				e.Upstreams = append(e.Upstreams, pick(strs))
			}
		}
		want := envelopeMarshal(e)
		key, body := e.KeyJSON()
		if string(body) != want {
			t.Fatalf("KeyJSON of %#v:\n got %s\nwant %s", e, body, want)
		}
		if key != sha256Hex([]byte(want)) {
			t.Fatalf("KeyJSON's key of %#v is not the digest of Marshal's text", e)
		}
		if _, ok := e.appendJSON(nil); ok {
			handWritten++
		}
	}
	if handWritten < 5000 {
		t.Errorf("%d envelopes of 20000 written by hand: the test no longer checks appendJSON", handWritten)
	}
}

// A grid node's envelope is written by hand, without allocating beyond
// its buffer and the sorting of its maps' keys.
func TestEnvelopeJSONByHand(t *testing.T) {
	e := &Envelope{V: EnvelopeVersion, Kind: "command", KindVersion: 1,
		Args:      map[string]json.RawMessage{"outputs": json.RawMessage(`["out/l1_7"]`), "run": json.RawMessage(`["sh","-c","echo l1_7 \u003e out/l1_7"]`)},
		Inputs:    map[string]string{},
		Upstreams: []string{strings.Repeat("ab", 32)},
	}
	b, ok := e.appendJSON(nil)
	if !ok || string(b) != envelopeMarshal(e) {
		t.Fatalf("appendJSON = %s, %v; Marshal: %s", b, ok, envelopeMarshal(e))
	}
}

func FuzzEnvelopeJSON(f *testing.F) {
	f.Add("command", "run", `["sh","-c","echo a \u003e b"]`, "in/a.txt", "sha", "up", 1)
	f.Add("", "", `[1, 2]`, "", "", "", 0)
	f.Add("é", "\u2028", "\"<\"", "\xff", "<", "&", -1)
	f.Fuzz(func(t *testing.T, kind, arg, raw, path, digest, upstream string, version int) {
		e := &Envelope{V: EnvelopeVersion, Kind: kind, KindVersion: version,
			Args:      map[string]json.RawMessage{arg: json.RawMessage(raw), "z" + arg: json.RawMessage(`"x"`)},
			Inputs:    map[string]string{path: digest, "b" + path: upstream},
			Upstreams: []string{upstream, digest},
			Seal:      map[string]string{digest: path},
		}
		if _, body := e.KeyJSON(); string(body) != envelopeMarshal(e) {
			t.Errorf("KeyJSON of %#v:\n got %s\nwant %s", e, body, envelopeMarshal(e))
		}
	})
}
