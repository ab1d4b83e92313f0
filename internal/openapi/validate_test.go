package openapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	genopenapi "github.com/shopmind/shopmind/gen/openapi"
	"github.com/shopmind/shopmind/internal/openapi"
)

func TestValidatorReadsTheWire(t *testing.T) {
	v, err := openapi.NewValidator(genopenapi.V31)
	if err != nil {
		t.Fatal(err)
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	sse := http.Header{"Content-Type": {"text/event-stream"}}
	login := `{"access_token":"a","token_type":"Bearer","expires_in":7200,"refresh_token":"r","refresh_expires_in":604800,"user":null}`
	chunk := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"conversation_id":"x"}`
	cases := []struct {
		name, method, path string
		status             int
		header             http.Header
		body               string
		complete           bool
		ok, checked        bool
	}{
		{"login in the envelope", "POST", "/api/v1/tenant/auth/login", 200, jsonHeader, `{"code":0,"message":"success","data":` + login + `}`, true, true, true},
		{"login behind the service prefix", "POST", "/tenant/api/v1/tenant/auth/login", 200, jsonHeader, `{"code":0,"message":"success","data":` + login + `}`, true, true, true},
		{"the bare message, as protoc-gen-openapiv2 described it", "POST", "/api/v1/tenant/auth/login", 200, jsonHeader, login, true, false, true},
		{"a field of the wrong type", "POST", "/api/v1/tenant/auth/login", 200, jsonHeader, `{"code":0,"message":"success","data":` + strings.Replace(login, `7200`, `"7200"`, 1) + `}`, true, false, true},
		{"a field missing", "POST", "/api/v1/tenant/auth/login", 200, jsonHeader, `{"code":0,"message":"success","data":` + strings.Replace(login, `"token_type":"Bearer",`, ``, 1) + `}`, true, false, true},
		{"a 401 envelope", "GET", "/api/v1/tenant/auth/info", 401, jsonHeader, `{"code":401,"message":"missing bearer token","data":null}`, true, true, true},
		{"a 401 with another code", "GET", "/api/v1/tenant/auth/info", 401, jsonHeader, `{"code":400,"message":"x","data":null}`, true, false, true},
		{"an error with data", "GET", "/api/v1/tenant/auth/info", 404, jsonHeader, `{"code":404,"message":"x","data":{}}`, true, false, true},
		{"a chat stream", "POST", "/api/v2/chat/message", 200, sse, "data: " + chunk + "\n\n: keep-alive\n\ndata: {\"type\":\"done\",\"conversation_id\":\"x\",\"message_id\":\"m\",\"finish_reason\":\"stop\",\"usage\":null}\n\ndata: [DONE]\n\n", true, true, true},
		{"a chat event without its conversation", "POST", "/api/v2/chat/message", 200, sse, "data: {\"type\":\"error\",\"code\":500,\"message\":\"x\",\"retryable\":false}\n\n", false, false, true},
		{"a stream cut before [DONE]", "POST", "/api/v2/chat/message", 200, sse, "data: " + chunk + "\n\n", true, false, true},
		{"health is no operation", "GET", "/healthz", 200, jsonHeader, `{}`, true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checked, err := v.Check(httptest.NewRequest(c.method, c.path, nil), c.status, c.header, []byte(c.body), c.complete)
			if checked != c.checked || (err == nil) != c.ok {
				t.Errorf("checked %v, err %v; want checked %v, ok %v", checked, err, c.checked, c.ok)
			}
		})
	}
}
