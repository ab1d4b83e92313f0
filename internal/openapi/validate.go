package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Validator checks the gateway's answers against the OpenAPI 3.1 document (kin-openapi's
// openapi3filter for JSON, each event against the operation's event schema for
// text/event-stream). internal/testutil/stack puts it on every platform test's client.
type Validator struct {
	router routers.Router
}

// NewValidator reads an OpenAPI 3.1 document (gen/openapi.V31).
func NewValidator(doc31 []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(doc31)
	if err != nil {
		return nil, fmt.Errorf("loading the OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI document does not validate: %w", err)
	}
	doc.Servers = nil // any host: the test platform listens on a loopback port
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &Validator{router: router}, nil
}

// route finds the operation of a request, after the prefixes the gateway strips (an
// environment, a service: /local/tenant/api/v1/...). nil: not an operation of the document
// (health, metrics, an unknown path or method).
func (v *Validator) route(r *http.Request) (*routers.Route, map[string]string, *http.Request) {
	path := r.URL.Path
	for range 3 {
		u := *r.URL
		u.Path, u.RawPath = path, ""
		req := r.Clone(context.Background())
		req.URL = &u
		if rt, params, err := v.router.FindRoute(req); err == nil {
			return rt, params, req
		}
		i := strings.Index(strings.TrimPrefix(path, "/"), "/")
		if i < 0 {
			return nil, nil, nil
		}
		path = path[i+1:]
		if !strings.HasPrefix(path, "/api/") && strings.Count(path, "/") < 3 {
			return nil, nil, nil
		}
	}
	return nil, nil, nil
}

// Check validates one answer. complete is false for a body the client stopped reading
// (then only the whole events of a stream are checked). It returns checked false when the
// request is no operation of the document.
func (v *Validator) Check(r *http.Request, status int, header http.Header, body []byte, complete bool) (checked bool, err error) {
	if r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return false, nil
	}
	rt, params, req := v.route(r)
	if rt == nil {
		return false, nil
	}
	name := rt.Method + " " + rt.Path
	if strings.HasPrefix(header.Get("Content-Type"), "text/event-stream") {
		return true, checkEvents(rt, status, body, complete, name)
	}
	if !complete {
		return true, nil
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: rt, Options: opts},
		Status:                 status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return true, fmt.Errorf("%s answered HTTP %d not as the OpenAPI document says: %w\nbody: %s", name, status, err, clip(body))
	}
	return true, nil
}

// checkEvents validates each whole event of a text/event-stream body.
func checkEvents(rt *routers.Route, status int, body []byte, complete bool, name string) error {
	resp := rt.Operation.Responses.Status(status)
	if resp == nil || resp.Value == nil || resp.Value.Content["text/event-stream"] == nil {
		return fmt.Errorf("%s answered HTTP %d with text/event-stream, which the OpenAPI document does not declare", name, status)
	}
	schema := resp.Value.Content["text/event-stream"].Schema.Value
	events := bytes.Split(body, []byte("\n\n"))
	if len(events) > 0 { // the text after the last blank line is not a whole event
		events = events[:len(events)-1]
	}
	sawDone := false
	for _, ev := range events {
		for _, line := range bytes.Split(ev, []byte("\n")) {
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok {
				// Comments and the other fields of the format (a resumable stream's id) are
				// not data.
				if len(line) > 0 && line[0] != ':' && !bytes.HasPrefix(line, []byte("id: ")) &&
					!bytes.HasPrefix(line, []byte("event: ")) && !bytes.HasPrefix(line, []byte("retry: ")) {
					return fmt.Errorf("%s: an event-stream line neither data, id nor comment: %q", name, clip(line))
				}
				continue
			}
			if string(data) == "[DONE]" {
				sawDone = true
				continue
			}
			var value any
			if err := json.Unmarshal(data, &value); err != nil {
				return fmt.Errorf("%s: event is not JSON: %w: %s", name, err, clip(data))
			}
			if err := schema.VisitJSON(value, openapi3.EnableJSONSchema2020()); err != nil {
				return fmt.Errorf("%s: event does not match the OpenAPI document: %w\nevent: %s", name, err, clip(data))
			}
		}
	}
	if complete && !sawDone {
		return fmt.Errorf("%s: event stream ended without data: [DONE]", name)
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}
