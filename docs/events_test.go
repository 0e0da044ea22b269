package docs

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-run/cairn/events"
)

// events.md is the schema of the events' JSON form: its version is
// events.Version, and it lists every event type with each of its fields.
func TestEventsSchemaIsDocumented(t *testing.T) {
	doc := readDoc(t, "events.md")
	assert.Contains(t, doc, fmt.Sprintf("**version %d**", events.Version))
	for _, f := range eventFields(reflect.TypeFor[events.Head]()) {
		assert.Contains(t, section(doc, "## The run's event log: `events.jsonl`"), "| `"+f+"` |", "the common field %s", f)
	}
	for _, e := range events.All() {
		sec := section(doc, "### `"+e.Kind()+"`")
		if !assert.NotEmpty(t, sec, "events.md has no section for %s", e.Kind()) {
			continue
		}
		for _, f := range eventFields(reflect.TypeOf(e).Elem()) {
			assert.Contains(t, sec, "`"+f+"`", "events.md's %s does not name its field %s", e.Kind(), f)
		}
	}
}

// eventFields are the JSON names of a struct's fields, below its embedded
// Head, and of the structs its slices hold.
func eventFields(ty reflect.Type) []string {
	var out []string
	for f := range ty.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || name == "-" || name == "" {
			continue
		}
		out = append(out, name)
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
			out = append(out, eventFields(f.Type.Elem())...)
		}
	}
	return out
}
