package inputcheck

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
)

// What the stores cannot hold, found in the JSON text itself and named by its path: a NUL
// (escaped or raw), a lone UTF-16 surrogate escape, nesting deeper than the limit.
func TestJSONTextProblem(t *testing.T) {
	cases := []struct{ body, field, rule string }{
		{`{"name":"a\u0000b"}`, "name", RuleNoNUL},
		{"{\"name\":\"a\x00b\"}", "name", RuleNoNUL},
		{`{"favorites":[{"target_key":"x\u0000"}]}`, "favorites[0].target_key", RuleNoNUL},
		{`{"name":"a\ud800b"}`, "name", RuleUTF8},
		{`{"name":"a\udc00"}`, "name", RuleUTF8},
		{`{"name":"\ud800\u0041"}`, "name", RuleUTF8},
		{`{"data":{"k":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}`, "data.k", RuleWellFormed},
	}
	for _, c := range cases {
		p, ok := JSONTextProblem([]byte(c.body), 128)
		if !ok || !strings.HasPrefix(p.Field, c.field) || p.Rule != c.rule {
			t.Errorf("%.60q: got %+v %v, want field %s rule %s", c.body, p, ok, c.field, c.rule)
		}
	}
	for _, good := range []string{`{"name":"a\\u0000"}`, `{"name":"😀 \ud83d\ude00"}`, `{"n":[[[1]]]}`, `{"name":"\\ud800"}`, `not json`} {
		if p, bad := JSONTextProblem([]byte(good), 128); bad {
			t.Errorf("%q: %+v", good, p)
		}
	}
}

// protojson answers a lone surrogate with "unexpected EOF" and no position: the error is
// named by the string that holds it.
func TestNamedDecodeErrorLoneSurrogate(t *testing.T) {
	body := []byte(`{"tenant_code":"demo","username":"a\ud800b"}`)
	var req tenantv1.LoginRequest
	err := protojson.Unmarshal(body, &req)
	if err == nil {
		t.Fatal("protojson accepted a lone surrogate")
	}
	if got := NamedDecodeError(err, body).Error(); !strings.HasPrefix(got, "username: ") || !strings.Contains(got, "surrogate") {
		t.Errorf("got %q, want it to name username and the surrogate", got)
	}
}
