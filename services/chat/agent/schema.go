package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Schema is the subset of JSON Schema the tools declare their parameters with (sent to the
// model as the function's parameters) and the registry checks arguments against: type,
// properties, required, items, enum, minimum, maximum, min/max items, max length.
type Schema struct {
	Type        string             `json:"type,omitempty"`
	Description string             `json:"description,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	Enum        []any              `json:"enum,omitempty"`
	Minimum     *float64           `json:"minimum,omitempty"`
	Maximum     *float64           `json:"maximum,omitempty"`
	MinItems    *int               `json:"minItems,omitempty"`
	MaxItems    *int               `json:"maxItems,omitempty"`
	MaxLength   *int               `json:"maxLength,omitempty"`
	Default     any                `json:"default,omitempty"`
	// AdditionalProperties false would reject unknown fields; models add some, so the
	// registry ignores them and the schema says nothing.
}

// Object is a schema of an object with the given properties and required names.
func Object(props map[string]*Schema, required ...string) *Schema {
	if props == nil {
		props = map[string]*Schema{}
	}
	return &Schema{Type: "object", Properties: props, Required: required}
}

func ptr[T any](v T) *T { return &v }

// JSON is the schema as JSON text.
func (s *Schema) JSON() json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // the schema is built from plain values
	}
	return b
}

// Validate checks a decoded JSON value (from encoding/json into any) against the schema and
// returns the first violations, each naming the path.
func (s *Schema) Validate(v any) []string {
	var errs []string
	s.validate("", v, &errs)
	return errs
}

func (s *Schema) validate(path string, v any, errs *[]string) {
	if s == nil || len(*errs) >= 5 {
		return
	}
	name := path
	if name == "" {
		name = "arguments"
	}
	bad := func(format string, args ...any) { *errs = append(*errs, name+": "+fmt.Sprintf(format, args...)) }
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("must be an object")
			return
		}
		for _, r := range s.Required {
			if val, ok := m[r]; !ok || val == nil {
				*errs = append(*errs, join(path, r)+": is required")
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p := s.Properties[k]; p != nil && m[k] != nil {
				p.validate(join(path, k), m[k], errs)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("must be an array")
			return
		}
		if s.MinItems != nil && len(a) < *s.MinItems {
			bad("must hold at least %d items", *s.MinItems)
		}
		if s.MaxItems != nil && len(a) > *s.MaxItems {
			bad("must hold at most %d items", *s.MaxItems)
		}
		for i, e := range a {
			s.Items.validate(fmt.Sprintf("%s[%d]", name, i), e, errs)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("must be a string")
			return
		}
		if s.MaxLength != nil && len([]rune(str)) > *s.MaxLength {
			bad("must be at most %d characters", *s.MaxLength)
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok {
			bad("must be a number")
			return
		}
		if s.Type == "integer" && f != math.Trunc(f) {
			bad("must be an integer")
		}
		if s.Minimum != nil && f < *s.Minimum {
			bad("must be at least %v", *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			bad("must be at most %v", *s.Maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("must be a boolean")
			return
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = fmt.Sprint(e)
		}
		bad("must be one of %s", strings.Join(vals, ", "))
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
