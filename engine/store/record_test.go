package store

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fullRecord is a record with every field set, the way cairn writes them
// (the test fails when Record gains a field this does not set).
func fullRecord(t *testing.T) Record {
	t.Helper()
	at := time.Date(2026, 12, 6, 21, 52, 27, 123456789, time.UTC)
	r := Record{
		Format:       Format,
		Key:          strings.Repeat("ab", 32),
		Envelope:     json.RawMessage(`{"v":"cairn.node.v1","kind":"command","args":{"run":["sh","-c","echo é > out/x"]},"inputs":{},"upstreams":[]}`),
		Outputs:      map[string]string{"out/x": strings.Repeat("0", 64), "out/dir/y": strings.Repeat("1", 64)},
		Inline:       map[string][]byte{"out/x": []byte("é\n"), "out/empty": {}},
		Kept:         []string{"out/dir/kept"},
		Modes:        map[string]uint32{"out/x": 0o644, "out/dir/y": 0o755},
		Result:       json.RawMessage(`{"score":0.5,"names":["a","b"],"nested":{"n":null}}`),
		OutputDigest: strings.Repeat("2", 64),
		ExitCode:     3,
		Started:      at,
		Ended:        at.Add(1500 * time.Millisecond),
		Attempts:     2,
		PeakRSSMiB:   123.5,
		PeakGPUMiB:   2048.25,
		Pipeline:     "grid",
		Address:      `stage.eval["a/b"]`,
		RunID:        "20261206T215227.123Z-abcdef",
		RunCounts:    map[string]int{"items": 2000, "stored": 1999},
		Debug:        true,
		Launch:       &Launch{Batch: "run/stage", BatchStarted: at, GPU: 1, Wave: 2, InFlight: 4, Launched: 3, BatchSize: 4},
		NotNeeded:    true,
	}
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && v.Field(i).IsZero() {
			t.Fatalf("fullRecord leaves Record.%s unset", f.Name)
		}
	}
	return r
}

// TestUnmarshalRecordIsEncodingJSON holds unmarshalRecord to
// encoding/json.Unmarshal: on the records cairn writes, on records with
// fields missing, and on damaged or unusual payloads, both fail or both
// decode the same record.
func TestUnmarshalRecordIsEncodingJSON(t *testing.T) {
	full, err := json.Marshal(fullRecord(t))
	require.NoError(t, err)
	plain := Record{Format: Format, Key: strings.Repeat("cd", 32), Envelope: json.RawMessage(`{}`),
		Outputs: map[string]string{}, Started: time.Unix(0, 0).UTC(), Ended: time.Unix(1, 0).UTC()}
	minimal, err := json.Marshal(plain)
	require.NoError(t, err)
	payloads := map[string]string{
		"every field":       string(full),
		"the fewest fields": string(minimal),
		"empty object":      `{}`,
		"null":              `null`,
		"empty":             ``,
		"truncated":         string(full[:len(full)/2]),
		"trailing bytes":    string(full) + `x`,
		"trailing space":    string(full) + " \n",
		"a second value":    string(full) + `{}`,
		"not an object":     `[1,2]`,
		"string format":     `{"format":"1","key":"k"}`,
		"fraction format":   `{"format":1.5}`,
		"huge format":       `{"format":1e400}`,
		"overflowing int":   `{"format":99999999999999999999,"key":"k"}`,
		"negative mode":     `{"modes":{"a":-1}}`,
		"bad base64":        `{"inline":{"a":"@@@"}}`,
		"bad time":          `{"started":"yesterday"}`,
		"null fields":       `{"outputs":null,"inline":null,"kept":null,"result":null,"launch":null,"started":null}`,
		"other case":        `{"FORMAT":1,"Key":"k","ADDRESS":"stage.x","Pipeline":"p"}`,
		"duplicate keys":    `{"key":"a","key":"b","outputs":{"x":"1","x":"2"}}`,
		"unknown fields":    `{"key":"k","later_field":{"deep":[1,{"x":true}]},"another":null}`,
		"invalid UTF-8":     "{\"key\":\"k\xff\xfe\",\"address\":\"stage.\xc3\"}",
		"escapes":           `{"key":"\u00e9\ud83d\ude00\n\t\"\\\/","address":"\ud800"}`,
		"bad escape":        `{"key":"\x"}`,
		"control character": "{\"key\":\"a\x01b\"}",
		"raw message types": `{"envelope":[1,"two",{"3":null}],"result":"just a string"}`,
		"bad raw message":   `{"envelope":{"a":},"key":"k"}`,
		"wrong kind":        `{"outputs":["a"],"key":"k"}`,
		"deep nesting":      `{"result":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`,
		"leading space":     " \t\n" + string(minimal),
		"byte order mark":   "\xef\xbb\xbf" + string(minimal),
	}
	for name, p := range payloads {
		t.Run(name, func(t *testing.T) { decodesAlike(t, []byte(p)) })
	}
}

// FuzzUnmarshalRecordIsEncodingJSON is TestUnmarshalRecordIsEncodingJSON
// on any payload.
func FuzzUnmarshalRecordIsEncodingJSON(f *testing.F) {
	full, err := json.Marshal(fullRecord(&testing.T{}))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte(`{"format":1,"key":"k","outputs":{"a":"b"},"inline":{"a":"AA=="},"started":"2026-01-02T03:04:05Z"}`))
	f.Add([]byte("{\"key\":\"k\xff\",\"KEY\":\"\\ud800\",\"result\":[1e400,-0.0,{}]}"))
	f.Fuzz(decodesAlike)
}

// decodesAlike decodes p with encoding/json and with unmarshalRecord, as a
// Record and as the fields an index's address pointers are read from: both
// fail, or both give the same value.
func decodesAlike(t *testing.T, p []byte) {
	t.Helper()
	sameDecoding(t, p, func() any { return &Record{} })
	sameDecoding(t, p, func() any { return &struct{ Pipeline, Address string }{} })
}

func sameDecoding(t *testing.T, p []byte, zero func() any) {
	t.Helper()
	want, got := zero(), zero()
	wantErr := json.Unmarshal(p, want)
	gotErr := unmarshalRecord(p, got)
	require.Equal(t, wantErr == nil, gotErr == nil, "encoding/json: %v; unmarshalRecord: %v", wantErr, gotErr)
	if wantErr == nil {
		require.Equal(t, want, got)
	}
}
