package openapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	genopenapi "github.com/shopmind/shopmind/gen/openapi"
	"github.com/shopmind/shopmind/internal/openapi"
	"github.com/shopmind/shopmind/internal/version"
)

type op struct {
	Access    string                     `json:"x-shopmind-access"`
	RPC       string                     `json:"x-shopmind-rpc"`
	Security  []any                      `json:"security"`
	Produces  []string                   `json:"produces"`
	Responses map[string]json.RawMessage `json:"responses"`
}

// What the committed OpenAPI 2 document says of every operation, whatever RPC it is: the
// envelope on success, the error envelope with the access rule's codes, the bearer scheme
// unless public, and the document's own description.
func TestEveryOperationDescribesTheWire(t *testing.T) {
	var doc struct {
		Swagger  string                   `json:"swagger"`
		Info     map[string]any           `json:"info"`
		Host     string                   `json:"host"`
		Security []map[string][]any       `json:"security"`
		Paths    map[string]map[string]op `json:"paths"`
		Defs     map[string]any           `json:"definitions"`
	}
	if err := json.Unmarshal(genopenapi.V2, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info["title"] != "ShopMind API" || doc.Info["version"] != version.Version || genopenapi.Version != version.Version {
		t.Errorf("info %v (binary version %s)", doc.Info, version.Version)
	}
	if doc.Host != openapi.Server || len(doc.Security) != 1 || doc.Security[0]["bearer"] == nil {
		t.Errorf("host %q, security %v", doc.Host, doc.Security)
	}
	if doc.Defs["google.rpc.Status"] != nil || doc.Defs[openapi.ErrorEnvelope] == nil {
		t.Error("errors are still described as google.rpc.Status, or the error envelope is missing")
	}
	n, streams := 0, 0
	for path, ops := range doc.Paths {
		for method, o := range ops {
			n++
			name := strings.ToUpper(method) + " " + path
			if o.RPC == "" || o.Access == "" {
				t.Errorf("%s: no x-shopmind-rpc or x-shopmind-access", name)
			}
			ok := string(o.Responses["200"])
			switch {
			case len(o.Produces) > 0 && o.Produces[0] == "text/event-stream":
				streams++
				if !strings.Contains(ok, `"$ref": "#/definitions/shopmind.`) {
					t.Errorf("%s: stream without its event schema: %s", name, ok)
				}
			case !strings.Contains(ok, `"enum": [`) || !strings.Contains(ok, `"data"`):
				t.Errorf("%s: 200 is not the envelope: %s", name, ok)
			}
			has := func(code string) bool { return o.Responses[code] != nil }
			public := o.Access == "public"
			if !has("400") || !has("429") || !has("500") || !has("503") || !has("default") {
				t.Errorf("%s: error responses %v", name, keys(o.Responses))
			}
			if public != (o.Security != nil && len(o.Security) == 0) || public == has("401") {
				t.Errorf("%s: access %s, security %v, 401 listed %v", name, o.Access, o.Security, has("401"))
			}
			if strings.HasPrefix(o.Access, "permission ") != has("403") && o.Access != "admin" {
				t.Errorf("%s: access %s, 403 listed %v", name, o.Access, has("403"))
			}
			if !strings.Contains(string(o.Responses["401"]), `"enum": [`) && has("401") {
				t.Errorf("%s: 401 does not pin the envelope code", name)
			}
		}
	}
	if n < 70 || streams < 2 {
		t.Errorf("%d operations, %d event streams", n, streams)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
