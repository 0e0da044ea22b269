package store

import (
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// unmarshalRecord decodes an index payload (a Record, or some of its
// fields) with encoding/json's rules, as encoding/json.Unmarshal does, in
// about 60% of its time: the decoder of JSON v2's prototype, which checks
// the input as it decodes it where encoding/json reads it through twice,
// once to check it and once to decode it. A plan of 10,000 cached nodes
// decodes 10,000 records (7 MB): two fifths of its CPU with encoding/json.
// TestUnmarshalRecordIsEncodingJSON holds the two to the same results.
func unmarshalRecord(raw []byte, v any) error {
	return jsonv1.Unmarshal(raw, v)
}
