package inputcheck

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
)

func TestFieldAt(t *testing.T) {
	doc := `{"metric":{"name":"x","config":{"filters":[{"a":1},{"b":[true,2]}]},"update_mask":12345}}`
	cases := map[string]string{
		`12345`:    "metric.update_mask",
		`"name"`:   "metric.name",
		`"x"`:      "metric.name",
		`2]`:       "metric.config.filters[1].b[1]",
		`{"a"`:     "metric.config.filters[0]",
		`{"metric`: "",
	}
	for at, want := range cases {
		off := strings.Index(doc, at)
		if got := fieldAt([]byte(doc), off); got != want {
			t.Errorf("at %q: got %q, want %q", at, got, want)
		}
	}
}

// protojson's and encoding/json's errors get the path of the value at fault.
func TestNamedDecodeError(t *testing.T) {
	body := " \n{\"metric\": {\"name\": \"gmv\",\n  \"update_mask\": 12345}}"
	var req analysisv1.UpdateMetricRequest
	err := protojson.Unmarshal([]byte(strings.TrimSpace(body)), &req)
	if err == nil {
		t.Fatal("protojson accepted a number for a field mask")
	}
	if got := NamedDecodeError(err, []byte(body)).Error(); !strings.HasPrefix(got, "metric.update_mask: ") {
		t.Errorf("protojson error: %s", got)
	}
	// encoding/json: a syntax error by byte offset.
	bad := []byte(`{"ids":[1,2,}`)
	var v any
	if got := NamedDecodeError(jsonErr(bad, &v), bad).Error(); !strings.HasPrefix(got, "ids[") {
		t.Errorf("json syntax error: %s", got)
	}
	if got := NamedDecodeError(errors.New("no position here"), []byte(body)).Error(); got != "no position here" {
		t.Errorf("unlocated error changed: %s", got)
	}
}

func jsonErr(b []byte, v any) error { return json.Unmarshal(b, v) }

// Hostile nesting is scanned in linear time and named by its first levels.
func TestFieldAtDeepNesting(t *testing.T) {
	deep := []byte(strings.Repeat("[", 200000))
	if got := fieldAt(deep, len(deep)-1); !strings.HasSuffix(got, "...") || len(got) > 200 {
		t.Fatalf("got %q", got)
	}
}
