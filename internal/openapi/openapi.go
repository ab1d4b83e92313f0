// Package openapi turns the OpenAPI 2 document protoc-gen-openapiv2 writes from the contract
// into documents that describe what the gateway sends, and renders it as OpenAPI 3.1
// (cmd/openapigen runs it in `make generate`; the results are gen/openapi). What it knows
// comes from the contract and the platform's tables, never from a list per operation:
//
//   - every operation's 200 is the envelope {code: 0, message, data} with the RPC's response
//     message as data (protoc-gen-openapiv2 describes the bare message);
//   - the errors are the envelope {code, message, data: null} with the codes the operation
//     can answer: 400 for every operation (validation, malformed input), 401 unless the RPC's
//     access rule is public, 403 when it names a permission or is for administrators, 413
//     when it takes a body, 429, 500 and 503 for every one; `default` for the other classes
//     of internal/apperr's table (404, 409, 410, 422, 501...), as each RPC's comment says;
//   - a bearer security scheme on every operation, and `security: []` with
//     x-shopmind-access "public" on the public ones (the access option of the contract);
//   - singular message fields (null on the wire when unset: protojson with unpopulated
//     fields) are nullable;
//   - the streams the services describe (restapi.StreamRoute) are text/event-stream with the
//     stream's event schema, and the collected reply where a request may ask for one;
//   - title, description, version (internal/version) and server.
//
// The 3.1 rendering is kin-openapi's openapi2conv and openapi3conv (a well-kept converter),
// plus what OpenAPI 2 cannot say: the HTTP bearer scheme, null, and a response with two
// content types.
package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3conv"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	commonv1 "github.com/shopmind/shopmind/gen/go/shopmind/common/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/restapi"
)

// Input is what Build reads.
type Input struct {
	// Swagger is protoc-gen-openapiv2's merged document (openapi_naming_strategy=fqn,
	// json_names_for_fields=false).
	Swagger []byte
	// Files is the contract, with its options (google.api.http, shopmind.common.v1.access).
	Files *protoregistry.Files
	// Streams are the services' server-sent event streams.
	Streams []restapi.StreamRoute
	// Version is the document's info.version.
	Version string
}

// Server is the address the documents name (make run's default); the gateway serving a
// document puts the address it was reached at instead (Serve).
const Server = "127.0.0.1:8080"

// ErrorEnvelope is the name of the error envelope's schema.
const ErrorEnvelope = "shopmind.Error"

const description = `ShopMind's REST API: the grpc-gateway edge of the platform's gRPC services, generated
from the Protobuf contract (proto/).

**Envelope.** Every answer is a JSON object {code, message, data}: code 0 and the operation's
data on success; on failure the envelope code (400, 401, 403, 404, 409, 410, 413, 422, 429,
500, 501, 502, 503, 504, the classes of internal/apperr), a message naming the field or the
problem, and data null. The HTTP status is the envelope code (200 on success), unless the
deployment sets SHOPMIND_ALWAYS_HTTP_200, when it is always 200.

**Authentication.** Sign in with POST /api/v1/tenant/auth/login; send the access_token as
Authorization: Bearer <token>. Operations marked x-shopmind-access: public need none.

**Paths.** The spec's service prefixes (/tenant, /analysis, /basic, /notify) and
environment prefixes (/local, /test) may precede every path. Accept:
application/vnd.shopmind.v<N>+json asks for another major version of the same path.

**Values.** Field names are the contract's (snake_case); 64-bit integers are JSON strings;
timestamps RFC 3339; a message field that is not set is null.

**Streams.** The chat operations answer text/event-stream: each event is one data: line of
JSON (the schema of the operation's 200), and data: [DONE] ends the stream.`

// Build returns the OpenAPI 2 document and its OpenAPI 3.1 rendering, indented JSON.
func Build(in Input) (v2, v31 []byte, err error) {
	var doc map[string]any
	if err := json.Unmarshal(in.Swagger, &doc); err != nil {
		return nil, nil, fmt.Errorf("reading the OpenAPI 2 input: %w", err)
	}
	b := &builder{doc: doc, defs: mapOf(doc, "definitions"), in: in}
	if err := b.indexRPCs(); err != nil {
		return nil, nil, err
	}
	if err := b.rewrite(); err != nil {
		return nil, nil, err
	}
	v2, err = marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	d3, err := To31(v2)
	if err != nil {
		return nil, nil, err
	}
	v31, err = marshal(d3)
	if err != nil {
		return nil, nil, err
	}
	return v2, v31, nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type rpc struct {
	method  protoreflect.MethodDescriptor
	access  *commonv1.AccessRule
	hasBody bool
	stream  *restapi.StreamRoute
}

type builder struct {
	doc  map[string]any
	defs map[string]any
	in   Input
	rpcs map[string]*rpc // "METHOD /path/{param}" -> rpc
}

// templateVar turns a google.api.http template variable ({name=pattern}) into {name}.
var templateVar = regexp.MustCompile(`\{([a-zA-Z0-9_.]+)=[^}]*\}`)

func routeKey(method, path string) string {
	return strings.ToUpper(method) + " " + templateVar.ReplaceAllString(path, "{$1}")
}

func (b *builder) indexRPCs() error {
	streams := map[string]*restapi.StreamRoute{}
	for i := range b.in.Streams {
		streams[b.in.Streams[i].RPC] = &b.in.Streams[i]
	}
	b.rpcs = map[string]*rpc{}
	var err error
	b.in.Files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		svcs := fd.Services()
		for i := 0; i < svcs.Len(); i++ {
			methods := svcs.Get(i).Methods()
			for j := 0; j < methods.Len(); j++ {
				md := methods.Get(j)
				rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
				if rule == nil {
					continue
				}
				access, _ := proto.GetExtension(md.Options(), commonv1.E_Access).(*commonv1.AccessRule)
				if access == nil {
					err = fmt.Errorf("%s has no (shopmind.common.v1.access) rule", md.FullName())
					return false
				}
				name := "/" + string(svcs.Get(i).FullName()) + "/" + string(md.Name())
				for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					method, path, ok := restapi.HTTPPattern(r)
					if !ok {
						continue
					}
					b.rpcs[routeKey(method, path)] = &rpc{method: md, access: access, hasBody: r.GetBody() != "", stream: streams[name]}
				}
			}
		}
		return true
	})
	return err
}

func mapOf(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	if v == nil {
		v = map[string]any{}
		m[key] = v
	}
	return v
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/definitions/" + name} }

// errorCodes are the envelope codes of the error table, ascending.
func errorCodes() []int {
	var codes []int
	for _, k := range apperr.Kinds() {
		if c := apperr.EnvelopeCode(k); !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	sort.Ints(codes)
	return codes
}

func (b *builder) rewrite() error {
	d := b.doc
	d["info"] = map[string]any{"title": "ShopMind API", "description": description, "version": b.in.Version,
		"license": map[string]any{"name": "Apache-2.0"}}
	d["host"] = Server
	d["basePath"] = "/"
	d["schemes"] = []any{"http", "https"}
	d["securityDefinitions"] = map[string]any{"bearer": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
		"description": "Authorization: Bearer <access_token> (a JWT from the login operation)."}}
	d["security"] = []any{map[string]any{"bearer": []any{}}}

	codes := errorCodes()
	anyCode := make([]any, len(codes))
	for i, c := range codes {
		anyCode[i] = c
	}
	b.defs[ErrorEnvelope] = map[string]any{
		"type": "object", "description": "The envelope of a failure.",
		"required": []any{"code", "message", "data"},
		"properties": map[string]any{
			"code":    map[string]any{"type": "integer", "format": "int32", "enum": anyCode, "description": "The error class (internal/apperr); the HTTP status too, unless the deployment answers every request with 200."},
			"message": map[string]any{"type": "string", "description": "What went wrong, naming the field for a 400."},
			"data":    map[string]any{"description": "Always null.", "x-nullable": true},
		},
	}
	delete(b.defs, "rpcStatus")
	delete(b.defs, "protobufAny")
	delete(b.defs, "google.rpc.Status")
	delete(b.defs, "google.protobuf.Any")

	var missing []string
	paths := mapOf(d, "paths")
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method, o := range ops {
			op, ok := o.(map[string]any)
			if !ok {
				continue
			}
			r := b.rpcs[routeKey(method, path)]
			if r == nil {
				missing = append(missing, strings.ToUpper(method)+" "+path)
				continue
			}
			if err := b.operation(op, r, codes); err != nil {
				return fmt.Errorf("%s %s: %w", strings.ToUpper(method), path, err)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("operations without an RPC of the contract: %s", strings.Join(missing, ", "))
	}
	return b.nullable()
}

var pathParam = regexp.MustCompile(`\{([^}]*)\}`)

// mergeEquivalentPaths puts the operations of paths that differ only in their parameters'
// names (GET /sessions/{conversation_id}, DELETE /sessions/{id}) under one path, the first
// in sort order, renaming the others' path parameters: OpenAPI 3 forbids such twins, and
// the name in a path is only a placeholder (the gateway binds the segment by position to
// the RPC's field, which the parameter's description names). The OpenAPI 2 document keeps
// the contract's paths as they are; only the 3.1 rendering merges them.
func mergeEquivalentPaths(paths map[string]any) error {
	shapes := map[string][]string{}
	for path := range paths {
		shape := pathParam.ReplaceAllString(path, "{}")
		shapes[shape] = append(shapes[shape], path)
	}
	for _, twins := range shapes {
		if len(twins) < 2 {
			continue
		}
		sort.Strings(twins)
		canon := twins[0]
		canonNames := pathParam.FindAllStringSubmatch(canon, -1)
		target := paths[canon].(map[string]any)
		for _, other := range twins[1:] {
			names := pathParam.FindAllStringSubmatch(other, -1)
			for method, o := range paths[other].(map[string]any) {
				if _, taken := target[method]; taken {
					return fmt.Errorf("%s %s and %s %s are the same route", strings.ToUpper(method), canon, strings.ToUpper(method), other)
				}
				op, _ := o.(map[string]any)
				params, _ := op["parameters"].([]any)
				for _, p := range params {
					pm, _ := p.(map[string]any)
					if pm["in"] != "path" {
						continue
					}
					for i, n := range names {
						if pm["name"] == n[1] && n[1] != canonNames[i][1] {
							pm["name"] = canonNames[i][1]
							desc, _ := pm["description"].(string)
							pm["description"] = strings.TrimSpace(desc + " (the request's " + n[1] + " field)")
						}
					}
				}
				target[method] = o
			}
			delete(paths, other)
		}
	}
	return nil
}

func errorResponse(code int, text string) map[string]any {
	return map[string]any{"description": text, "schema": map[string]any{"allOf": []any{ref(ErrorEnvelope), map[string]any{
		"type": "object", "properties": map[string]any{"code": map[string]any{"type": "integer", "enum": []any{code}}}}}}}
}

// envelope is the success envelope around data.
func envelope(data map[string]any) map[string]any {
	return map[string]any{"type": "object", "required": []any{"code", "message", "data"}, "properties": map[string]any{
		"code":    map[string]any{"type": "integer", "format": "int32", "enum": []any{0}, "description": "0: success."},
		"message": map[string]any{"type": "string", "description": `"success".`},
		"data":    data,
	}}
}

func (b *builder) operation(op map[string]any, r *rpc, codes []int) error {
	access := r.access
	out := string(r.method.Output().FullName())
	if _, ok := b.defs[out]; !ok {
		if err := b.addMessage(r.method.Output()); err != nil {
			return err
		}
	}
	responses := map[string]any{}
	switch {
	case r.stream != nil:
		ev := r.stream.Event
		if ev.Name == "" || ev.Schema == "" {
			return fmt.Errorf("stream %s documents no event schema (restapi.StreamRoute.Event)", r.stream.RPC)
		}
		var schema map[string]any
		if err := json.Unmarshal([]byte(ev.Schema), &schema); err != nil {
			return fmt.Errorf("stream %s: event schema: %w", r.stream.RPC, err)
		}
		b.defs[ev.Name] = schema
		text := "Server-sent events (streaming responses): each `data:` line is one event (this schema), `data: [DONE]` ends the stream; " +
			"the " + r.stream.Header + " response header names the stream."
		if r.stream.Resume != "" {
			text += " Each event carries an `id:` line (its offset); a client reconnecting with the Last-Event-ID header " +
				"resumes after that event (it sets " + r.stream.Resume + ")."
		}
		// Errors before the stream are envelopes, application/json, for every stream.
		produces := []any{"text/event-stream", "application/json"}
		if r.stream.Reply != "" {
			reply, err := b.in.Files.FindDescriptorByName(protoreflect.FullName(r.stream.Reply))
			if err != nil {
				return fmt.Errorf("stream %s: reply %s: %w", r.stream.RPC, r.stream.Reply, err)
			}
			if err := b.addMessage(reply.(protoreflect.MessageDescriptor)); err != nil {
				return err
			}
			text += " A request asking for no stream is answered application/json: the envelope with data " + r.stream.Reply +
				" (x-shopmind-reply; the OpenAPI 3.1 document lists both content types)."
			op["x-shopmind-reply"] = ref(r.stream.Reply)
		}
		op["produces"] = produces
		op["x-shopmind-event"] = ref(ev.Name)
		responses["200"] = map[string]any{"description": text, "schema": ref(ev.Name),
			"headers": map[string]any{r.stream.Header: map[string]any{"type": "string", "description": "The stream's id (" + r.stream.Header + ")."}}}
	case r.method.IsStreamingServer():
		responses["200"] = map[string]any{"description": "A stream of newline-delimited envelopes (streaming responses), data {result: " + out + "}.",
			"schema": envelope(map[string]any{"type": "object", "properties": map[string]any{"result": ref(out)}})}
	default:
		responses["200"] = map[string]any{"description": "Success: data is " + out + ".", "schema": envelope(ref(out))}
	}

	listed := []int{400}
	responses["400"] = errorResponse(400, "Invalid request: a rule of the contract, malformed JSON or parameters; the message names the field.")
	if !access.GetPublic() {
		listed = append(listed, 401)
		responses["401"] = errorResponse(401, "No bearer token, or an invalid, expired or revoked one.")
	}
	if access.GetPermission() != "" || access.GetAdmin() {
		listed = append(listed, 403)
		responses["403"] = errorResponse(403, "The caller's roles do not grant the permission this operation needs.")
	}
	if r.hasBody {
		listed = append(listed, 413)
		responses["413"] = errorResponse(413, "The request body is larger than the limit.")
	}
	listed = append(listed, 429, 500, 503)
	responses["429"] = errorResponse(429, "Too many requests (rate limit or login lockout); Retry-After says when to try again.")
	responses["500"] = errorResponse(500, "Internal error.")
	responses["503"] = errorResponse(503, "A backend or its database is unavailable; retry later.")
	var others []string
	for _, c := range codes {
		if !slices.Contains(listed, c) && c != 401 && c != 403 {
			others = append(others, strconv.Itoa(c))
		}
	}
	responses["default"] = map[string]any{"description": "Another error class (" + strings.Join(others, ", ") +
		"), as the operation's description says.", "schema": ref(ErrorEnvelope)}
	op["responses"] = responses

	var rule string
	switch {
	case access.GetPublic():
		op["security"] = []any{}
		rule = "public"
	case access.GetAdmin():
		rule = "admin"
	case access.GetPermission() != "":
		rule = "permission " + access.GetPermission()
	default:
		rule = "authenticated"
	}
	op["x-shopmind-access"] = rule
	op["x-shopmind-rpc"] = string(r.method.FullName())
	return nil
}

// reach adds md and every message its fields use to seen.
func reach(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) {
	if seen[md.FullName()] {
		return
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		if m := fields.Get(i).Message(); m != nil {
			reach(m, seen)
		}
	}
}

// nullable marks the singular message fields of every message definition nullable, and
// lists as required the fields the wire always carries (all but oneof members and proto3
// optional ones) in the messages only answers use; a message requests use too keeps its
// fields optional, since a client need not send them.
func (b *builder) nullable() error {
	inputs, outputs := map[protoreflect.FullName]bool{}, map[protoreflect.FullName]bool{}
	for _, r := range b.rpcs {
		reach(r.method.Input(), inputs)
		reach(r.method.Output(), outputs)
		if r.stream != nil && r.stream.Reply != "" {
			if d, err := b.in.Files.FindDescriptorByName(protoreflect.FullName(r.stream.Reply)); err == nil {
				if md, ok := d.(protoreflect.MessageDescriptor); ok {
					reach(md, outputs)
				}
			}
		}
	}
	for name, def := range b.defs {
		desc, err := b.in.Files.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			continue // not a message of the contract (the envelope, an event schema)
		}
		md, ok := desc.(protoreflect.MessageDescriptor)
		if !ok {
			continue
		}
		props, _ := def.(map[string]any)["properties"].(map[string]any)
		answerOnly := outputs[md.FullName()] && !inputs[md.FullName()]
		var required []any
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			if answerOnly && fd.ContainingOneof() == nil && props[string(fd.Name())] != nil {
				required = append(required, string(fd.Name()))
			}
			if p, ok := props[string(fd.Name())].(map[string]any); ok && fd.Message() != nil {
				fixDynamicValue(p, fd)
			}
			if fd.Message() == nil || fd.IsList() || fd.IsMap() || fd.ContainingOneof() != nil {
				continue
			}
			p, _ := props[string(fd.Name())].(map[string]any)
			if p == nil {
				continue
			}
			props[string(fd.Name())] = nullableSchema(p)
		}
		if len(required) > 0 {
			def.(map[string]any)["required"] = required
		}
	}
	return nil
}

// fixDynamicValue corrects protoc-gen-openapiv2's schema of a google.protobuf.ListValue
// (an array of objects, where its items are any JSON value) and Value (any JSON value).
func fixDynamicValue(p map[string]any, fd protoreflect.FieldDescriptor) {
	target := p
	if fd.IsList() {
		target, _ = p["items"].(map[string]any)
		if target == nil {
			return
		}
	}
	switch fd.Message().FullName() {
	case "google.protobuf.ListValue":
		target["type"] = "array"
		target["items"] = map[string]any{"x-nullable": true} // any JSON value, null included
	case "google.protobuf.Value":
		delete(target, "type")
		delete(target, "items")
		target["x-nullable"] = true
	}
}

func nullableSchema(p map[string]any) map[string]any {
	if r, ok := p["$ref"]; ok {
		out := map[string]any{"allOf": []any{map[string]any{"$ref": r}}, "x-nullable": true}
		for k, v := range p {
			if k != "$ref" {
				out[k] = v
			}
		}
		return out
	}
	p["x-nullable"] = true
	return p
}

// addMessage adds the definition of a message protoc-gen-openapiv2 did not write (one no
// RPC names, such as a stream's collected reply), and of the messages it uses.
func (b *builder) addMessage(md protoreflect.MessageDescriptor) error {
	name := string(md.FullName())
	if _, ok := b.defs[name]; ok {
		return nil
	}
	props := map[string]any{}
	def := map[string]any{"type": "object", "properties": props}
	b.defs[name] = def
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		s, err := b.fieldSchema(fd)
		if err != nil {
			return err
		}
		if fd.IsList() {
			s = map[string]any{"type": "array", "items": s}
		} else if fd.IsMap() {
			v, err := b.fieldSchema(fd.MapValue())
			if err != nil {
				return err
			}
			s = map[string]any{"type": "object", "additionalProperties": v}
		}
		props[string(fd.Name())] = s
	}
	return nil
}

func (b *builder) fieldSchema(fd protoreflect.FieldDescriptor) (map[string]any, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return map[string]any{"type": "boolean"}, nil
	case protoreflect.StringKind:
		return map[string]any{"type": "string"}, nil
	case protoreflect.BytesKind:
		return map[string]any{"type": "string", "format": "byte"}, nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return map[string]any{"type": "integer", "format": "int32"}, nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return map[string]any{"type": "integer", "format": "int64"}, nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return map[string]any{"type": "string", "format": "int64"}, nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"type": "string", "format": "uint64"}, nil
	case protoreflect.FloatKind:
		return map[string]any{"type": "number", "format": "float"}, nil
	case protoreflect.DoubleKind:
		return map[string]any{"type": "number", "format": "double"}, nil
	case protoreflect.EnumKind:
		return ref(string(fd.Enum().FullName())), nil
	}
	md := fd.Message()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case "google.protobuf.Duration":
		return map[string]any{"type": "string"}, nil
	case "google.protobuf.Struct":
		return map[string]any{"type": "object"}, nil
	case "google.protobuf.ListValue":
		return map[string]any{"type": "array", "items": map[string]any{"x-nullable": true}}, nil
	case "google.protobuf.Value":
		return map[string]any{}, nil
	}
	if err := b.addMessage(md); err != nil {
		return nil, err
	}
	return ref(string(md.FullName())), nil
}

// To31 renders an OpenAPI 2 document of Build as OpenAPI 3.1.
func To31(v2 []byte) (*openapi3.T, error) {
	var raw map[string]any
	if err := json.Unmarshal(v2, &raw); err != nil {
		return nil, err
	}
	if err := mergeEquivalentPaths(mapOf(raw, "paths")); err != nil {
		return nil, err
	}
	merged, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var d2 openapi2.T
	if err := json.Unmarshal(merged, &d2); err != nil {
		return nil, err
	}
	d3, err := openapi2conv.ToV3(&d2)
	if err != nil {
		return nil, fmt.Errorf("converting to OpenAPI 3: %w", err)
	}
	d3.Components.SecuritySchemes = openapi3.SecuritySchemes{"bearer": &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
		Type: "http", Scheme: "bearer", BearerFormat: "JWT",
		Description: "Authorization: Bearer <access_token> (a JWT from the login operation)."}}}
	schemas := d3.Components.Schemas
	null := func() *openapi3.SchemaRef {
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"null"}}}
	}
	if e := schemas[ErrorEnvelope]; e != nil {
		data := e.Value.Properties["data"].Value
		data.Type, data.Nullable = &openapi3.Types{"null"}, false
	}
	for _, s := range schemas {
		for _, p := range s.Value.Properties {
			if p.Value != nil && p.Value.Nullable && len(p.Value.AllOf) == 1 && p.Value.Type == nil {
				v := p.Value
				v.AnyOf, v.AllOf, v.Nullable = openapi3.SchemaRefs{v.AllOf[0], null()}, nil, false
			}
			anyValueItemsNullable(p, null)
		}
	}
	for _, item := range d3.Paths.Map() {
		for _, op := range item.Operations() {
			ev, ok := op.Extensions["x-shopmind-event"].(map[string]any)
			if !ok {
				continue
			}
			delete(op.Extensions, "x-shopmind-event") // said by the content types below
			resp := op.Responses.Value("200").Value
			resp.Content = openapi3.Content{"text/event-stream": &openapi3.MediaType{Schema: schemaRef3(schemas, ev["$ref"])}}
			if reply, ok := op.Extensions["x-shopmind-reply"].(map[string]any); ok {
				delete(op.Extensions, "x-shopmind-reply")
				data := schemaRef3(schemas, reply["$ref"])
				resp.Content["application/json"] = &openapi3.MediaType{Schema: &openapi3.SchemaRef{Value: &openapi3.Schema{
					Type: &openapi3.Types{"object"}, Required: []string{"code", "message", "data"},
					Properties: openapi3.Schemas{
						"code":    {Value: &openapi3.Schema{Type: &openapi3.Types{"integer"}, Format: "int32", Enum: []any{0}}},
						"message": {Value: &openapi3.Schema{Type: &openapi3.Types{"string"}}},
						"data":    data,
					}}}}
			}
		}
	}
	openapi3conv.Upgrade(d3)
	d3.OpenAPI = "3.1.0"
	d3.Servers = openapi3.Servers{{URL: "http://" + Server, Description: "make run's default address"}}
	if err := d3.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI 3.1 rendering does not validate: %w", err)
	}
	return d3, nil
}

func schemaRef3(schemas openapi3.Schemas, r any) *openapi3.SchemaRef {
	s, _ := r.(string)
	name := strings.TrimPrefix(s, "#/definitions/")
	out := &openapi3.SchemaRef{Ref: "#/components/schemas/" + name}
	if def := schemas[name]; def != nil {
		out.Value = def.Value
	}
	return out
}

// WriteServedHost writes doc to w with its server rewritten to the address r reached it at,
// so that an interactive reference calls the gateway it was loaded from. doc is not
// copied: the parts between
// the placeholders are written as they are, the request's host and URL in their place (the
// documents are large; a copy per placeholder per request was the cost).
func WriteServedHost(w io.Writer, doc []byte, r *http.Request) error {
	host, err := json.Marshal(r.Host)
	if err != nil || r.Host == "" {
		_, err := w.Write(doc)
		return err
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	url, _ := json.Marshal(scheme + "://" + r.Host)
	type hole struct {
		at   int
		old  string
		with []byte
	}
	var holes []hole
	for _, h := range []struct {
		old  string
		with []byte
	}{{`"host": "` + Server + `"`, append([]byte(`"host": `), host...)}, {`"url": "http://` + Server + `"`, append([]byte(`"url": `), url...)}} {
		if i := bytes.Index(doc, []byte(h.old)); i >= 0 {
			holes = append(holes, hole{i, h.old, h.with})
		}
	}
	slices.SortFunc(holes, func(a, b hole) int { return a.at - b.at })
	at := 0
	for _, h := range holes {
		if _, err := w.Write(doc[at:h.at]); err != nil {
			return err
		}
		if _, err := w.Write(h.with); err != nil {
			return err
		}
		at = h.at + len(h.old)
	}
	_, err = w.Write(doc[at:])
	return err
}

// anyValueItemsNullable lets the items of google.protobuf.ListValue arrays (any JSON value,
// so also null: a SQL NULL in a result row) be null, as anyOf [any, null]: the conversion
// from OpenAPI 2 drops x-nullable below the first level.
func anyValueItemsNullable(p *openapi3.SchemaRef, null func() *openapi3.SchemaRef) {
	for p != nil && p.Ref == "" && p.Value != nil && p.Value.Items != nil {
		it := p.Value.Items
		if it.Ref == "" && it.Value != nil && it.Value.Type == nil && len(it.Value.AllOf) == 0 && len(it.Value.AnyOf) == 0 &&
			len(it.Value.Properties) == 0 {
			p.Value.Items = &openapi3.SchemaRef{Value: &openapi3.Schema{AnyOf: openapi3.SchemaRefs{it, null()}}}
			return
		}
		p = it
	}
}
