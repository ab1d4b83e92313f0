package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
)

// fuzzBodies decode a body as the generated handlers do: whole into the request (body:
// "*": plain fields, a nested message, repeated fields, timestamps, a structpb.Value) or
// into one field (CreateMetric's body: "metric", grpc-gateway's non-message path). fresh
// is the message the JSON value stands for.
var fuzzBodies = []struct {
	decode func(runtime.Decoder) (proto.Message, error)
	fresh  func() proto.Message
}{
	{func(d runtime.Decoder) (proto.Message, error) {
		var r basicv1.CreateGoodsRequest
		return &r, d.Decode(&r)
	}, func() proto.Message { return &basicv1.CreateGoodsRequest{} }},
	{func(d runtime.Decoder) (proto.Message, error) {
		var r tenantv1.LoginRequest
		return &r, d.Decode(&r)
	}, func() proto.Message { return &tenantv1.LoginRequest{} }},
	{func(d runtime.Decoder) (proto.Message, error) {
		var r analysisv1.PreviewQueryRequest
		return &r, d.Decode(&r)
	}, func() proto.Message { return &analysisv1.PreviewQueryRequest{} }},
	{func(d runtime.Decoder) (proto.Message, error) {
		var r analysisv1.CreateMetricRequest
		err := d.Decode(&r.Metric)
		return r.Metric, err
	}, func() proto.Message { return &analysisv1.Metric{} }},
}

// jsonSpace is JSON's white space (bytes.TrimSpace also trims \v, \f and U+0085, which JSON
// does not allow).
const jsonSpace = " \t\r\n"

// FuzzEnvelopeDecode checks the request-body decoder the generated handlers call
// (NewDecoder(body).Decode(&req), where io.EOF means an empty body): it accepts exactly one
// JSON value that protojson accepts for the message, and nothing after it.
func FuzzEnvelopeDecode(f *testing.F) {
	for _, s := range []string{
		`{"tenant_code":"demo","username":"admin","password":"admin123"}`,
		`{"goods":{"shop_id":1,"name":"Red Dress","status":"on_sale","price":9.5}}`,
		`{"metric_names":["gmv"],"dimensions":["shop"],"start_time":"2026-10-01T00:00:00Z","end_time":"2026-11-01T00:00:00Z"}`,
		`{"name":"aov","display_name":"AOV","group":"Ratios","type":"formula","config":{"formula":{"expression":"gmv / order_count","dependency_ids":[1,2]}}}`,
		`{"metric_ids":[1,2],"filters":[{"field":"shop","operator":"in","value":[1,"a",null,{"x":true}]}],"limit":10}`,
		`{}`, ` {} `, "", "  \n", `{}{}`, `{} {"a":1}`, `{}}`, `{"username":"a"} x`, `{"username":"a",}`,
		`null`, `[]`, `"x"`, `{"username":"\ud800"}`, `{"tenantCode":"demo"}`, `{"username":"a","username":"b"}`,
	} {
		f.Add([]byte(s))
	}
	m := newEnvelopeMarshaler()
	f.Fuzz(func(t *testing.T, data []byte) {
		trimmed := bytes.Trim(data, jsonSpace)
		for _, b := range fuzzBodies {
			got, err := b.decode(m.NewDecoder(bytes.NewReader(data)))
			if errors.Is(err, io.EOF) != (len(trimmed) == 0) {
				t.Fatalf("%T %q: error %v; an empty body (io.EOF) is exactly a blank one", got, data, err)
			}
			want := b.fresh()
			wantErr := m.UnmarshalOptions.Unmarshal(trimmed, want)
			if err != nil {
				if len(trimmed) > 0 && json.Valid(data) && wantErr == nil {
					t.Fatalf("%T %q: refused (%v), but it is one JSON value protojson accepts", got, data, err)
				}
				continue
			}
			if !json.Valid(trimmed) {
				t.Fatalf("%T %q: accepted, but it is not exactly one JSON value", got, data)
			}
			if wantErr != nil {
				t.Fatalf("%T %q: accepted, but protojson refuses it: %v", got, data, wantErr)
			}
			if !sameMessage(t, got, want) {
				t.Fatalf("%T %q: decoded %v, protojson %v", got, data, got, want)
			}
			// A second value, or anything else after the first, is refused.
			for _, tail := range []string{" {}", "{}", "}", "]", ",", " x", `"`, "\x00", "0"} {
				extra := append(bytes.Clone(data), tail...)
				if _, err := b.decode(m.NewDecoder(bytes.NewReader(extra))); err == nil {
					t.Fatalf("%T %q: accepted with trailing data", got, extra)
				}
			}
		}
	})
}

// sameMessage compares deterministic encodings (proto.Equal never equates NaN doubles).
func sameMessage(t *testing.T, a, b proto.Message) bool {
	opt := proto.MarshalOptions{Deterministic: true}
	x, err := opt.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := opt.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
