//go:build platform

package badinput

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
)

// specPath is the merged OpenAPI v2 document, relative to this package.
const specPath = "../../gen/openapi/shopmind.swagger.json"

// schema is the subset of an OpenAPI v2 schema the sweep reads.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Format               string             `json:"format"`
	Enum                 []any              `json:"enum"`
	Items                *schema            `json:"items"`
	Properties           map[string]*schema `json:"properties"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	ReadOnly             bool               `json:"readOnly"`
	Title                string             `json:"title"`
}

type parameter struct {
	Name   string  `json:"name"`
	In     string  `json:"in"`
	Type   string  `json:"type"`
	Format string  `json:"format"`
	Enum   []any   `json:"enum"`
	Items  *schema `json:"items"`
	Schema *schema `json:"schema"`
}

type response struct {
	Description string  `json:"description"`
	Schema      *schema `json:"schema"`
}

type rawOperation struct {
	OperationID string              `json:"operationId"`
	Parameters  []parameter         `json:"parameters"`
	Responses   map[string]response `json:"responses"`
}

type document struct {
	Paths       map[string]map[string]rawOperation `json:"paths"`
	Definitions map[string]*schema                 `json:"definitions"`
}

// operation is one method and path of the document.
type operation struct {
	Method, Path, ID  string
	PathParams, Query []parameter // path and query parameters
	Body              *parameter  // nil: no body
	Streaming         bool
}

func (o *operation) name() string { return o.Method + " " + o.Path }

// loadSpec reads the document and lists its operations in a stable order.
func loadSpec(t testing.TB) (*document, []*operation) {
	t.Helper()
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", specPath, err)
	}
	var ops []*operation
	for path, methods := range doc.Paths {
		for method, raw := range methods {
			op := &operation{Method: strings.ToUpper(method), Path: path, ID: raw.OperationID}
			for i := range raw.Parameters {
				p := raw.Parameters[i]
				switch p.In {
				case "path":
					op.PathParams = append(op.PathParams, p)
				case "query":
					op.Query = append(op.Query, p)
				case "body":
					op.Body = &p
				}
			}
			if r, ok := raw.Responses["200"]; ok && (strings.Contains(r.Description, "streaming responses") ||
				r.Schema != nil && strings.HasPrefix(r.Schema.Title, "Stream result of")) {
				op.Streaming = true
			}
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	return &doc, ops
}

// resolve follows a $ref (one level; definitions do not alias each other).
func (d *document) resolve(s *schema) (*schema, string) {
	if s == nil {
		return nil, ""
	}
	if s.Ref != "" {
		name := strings.TrimPrefix(s.Ref, "#/definitions/")
		if def, ok := d.Definitions[name]; ok {
			return def, name
		}
		return &schema{}, name
	}
	return s, ""
}

// sortedKeys returns a schema's property names in order.
func sortedKeys(s *schema) []string {
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mapValue returns the value schema of a map (additionalProperties), or nil.
func mapValue(s *schema) *schema {
	if len(s.AdditionalProperties) == 0 || s.AdditionalProperties[0] != '{' {
		return nil
	}
	var v schema
	if json.Unmarshal(s.AdditionalProperties, &v) != nil {
		return nil
	}
	return &v
}

// isIntFormat reports whether a string or integer carries an integer.
func isIntFormat(typ, format string) bool {
	switch format {
	case "int32", "int64", "uint32", "uint64":
		return true
	}
	return typ == "integer"
}

// camel is protojson's lowerCamelCase JSON name of a proto field name.
func camel(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}
