package items

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replyLines are lines a worker may write: the ones decodeReply reads
// itself first, then ones it leaves to json.Unmarshal.
var replyLines = []string{
	`{"id":"q1","score":1,"charged":1,"outputs":{"answer":"3"}}` + "\n",
	`{"id":"q1","score":0.25,"charged":2,"outputs":{"answer":"3","steps":[1,2.5e3,true,null,"x\"y"]}}`,
	` { "id" : "a b" , "score" : null , "error" : "HTTP 500: oops" , "outputs" : null } ` + "\r\n",
	`{"id":"q2","infra_failure":true,"error":"connection refused"}`,
	`{"id":"q2","infra_failure":false,"score":-0,"charged":0}`,
	`{"id":"q3","score":1e-7,"outputs":"caf\u00e9 ☕"}`,
	`{"id":"q4","outputs":[ {"a" : 1 } , [] , {} ]}`,
	`{"id":"q5","score":1.5E+2,"charged":-3}`,
	`{}`,
	`{"id":""}`,
	// Lines Unmarshal reads.
	`{"id":"q\u0031","score":1}`,
	`{"ID":"q1","score":1}`,
	`{"id":"q1","Score":1}`,
	`{"id":"q1","latency_ms":12,"score":1}`,
	`{"id":"q1","score":1,"score":0}`,
	`{"id":"q1","charged":1.0}`,
	`{"id":"q1","charged":null}`,
	`{"id":"q1","score":1e999}`,
	`{"id":"q1","score":"1"}`,
	`{"id":7,"score":1}`,
	`{"id":null,"score":1}`,
	`{"id":"caf\u00e9"}`,
	"{\"id\":\"caf\xc3\xa9\"}",
	"{\"id\":\"q1\",\"outputs\":\"\xff\"}",
	`{"id":"q1","infra_failure":1}`,
	`{"id":"q1","charged":99999999999999999999}`,
	// Lines neither reads.
	`{"id":"q1","score":1`,
	`{"id":"q1","score":1}}`,
	`{"id":"q1","score":01}`,
	`{"id":"q1","score":1.}`,
	`{"id":"q1","score":-}`,
	`{"id":"q1","score":1,}`,
	`{"id":"q1" "score":1}`,
	`{"id":"q1","outputs":[1,]}`,
	`{"id":"q1","outputs":{"a"}}`,
	`{"id":"q1","infra_failure":truex}`,
	`{"id":"q1","score":nul}`,
	`{"id":"q1","outputs":"\q"}`,
	`["id","q1"]`,
	`"q1"`,
	``,
	`{"id":"q1"} {}`,
}

// unmarshalReply is what handle does without decodeReply.
func unmarshalReply(line []byte) (response, error) {
	var r response
	err := json.Unmarshal(line, &r)
	return r, err
}

// TestDecodeReplyIsUnmarshal: every line decodeReply reads, it reads as
// json.Unmarshal does; it reads the lines workers write (the README's and
// the Go example's) itself.
func TestDecodeReplyIsUnmarshal(t *testing.T) {
	var c canonicalizer
	fast := 0
	for _, line := range replyLines {
		var got response
		if !decodeReply([]byte(line), &got, &c) {
			continue
		}
		fast++
		want, err := unmarshalReply([]byte(line))
		if err != nil {
			t.Errorf("decodeReply read %q, which Unmarshal refuses: %v", line, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: decodeReply read %+v, Unmarshal %+v", line, got, want)
		}
	}
	if fast != 10 {
		t.Errorf("decodeReply read %d of the first 10 lines and none after them; want exactly those 10", fast)
	}
	for _, line := range replyLines[:10] {
		var got response
		if !decodeReply([]byte(line), &got, &c) {
			t.Errorf("decodeReply left %q to Unmarshal", line)
		}
	}
	// Deep outputs: Unmarshal's limit is 10,000 levels in all; decodeReply
	// leaves anything near it to Unmarshal.
	for _, depth := range []int{100, 9997, 9998, 9999, 10000} {
		line := `{"id":"q","outputs":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
		var got response
		if decodeReply([]byte(line), &got, &c) {
			if _, err := unmarshalReply([]byte(line)); err != nil {
				t.Errorf("outputs nested %d deep: decodeReply read it, Unmarshal refuses it: %v", depth, err)
			}
		} else if depth == 100 {
			t.Errorf("outputs nested 100 deep: left to Unmarshal")
		}
	}
}

func FuzzDecodeReply(f *testing.F) {
	for _, line := range replyLines {
		f.Add(line)
	}
	var c canonicalizer
	f.Fuzz(func(t *testing.T, line string) {
		var got response
		if !decodeReply([]byte(line), &got, &c) {
			return
		}
		want, err := unmarshalReply([]byte(line))
		if err != nil {
			t.Fatalf("decodeReply read %q, which Unmarshal refuses: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeReply read %+v, Unmarshal %+v", line, got, want)
		}
	})
}

// A line json.Unmarshal cannot read into a response is explained in the
// protocol's words: the field, what the line gives, what a response gives;
// never Go's types.
func TestReplyProblemSpeaksOfTheProtocol(t *testing.T) {
	for line, want := range map[string]string{
		`{"id":"a","score":true}`:           "score is true or false, where a response gives a number or null",
		`{"id":"a","score":1e400}`:          "score is the number 1e400, beyond what a float64 holds (about ±1.8e308)",
		`{"id":"a","charged":1.5}`:          "charged is the number 1.5, where a response gives a whole number",
		`{"id":"a","error":5}`:              "error is a number, where a response gives a string",
		`{"id":"a","infra_failure":"yes"}`:  "infra_failure is a string, where a response gives true or false",
		`{"id":["a"]}`:                      "id is an array, where a response gives a string",
		`{"id":"a","score":{"x":1}}`:        "score is an object, where a response gives a number or null",
		`{"id":"a","score":0.5,"charged":}`: "invalid character '}' looking for beginning of value",
	} {
		var r response
		err := json.Unmarshal([]byte(line), &r)
		require.Error(t, err, line)
		assert.Equal(t, want, replyProblem(err), line)
	}
}
