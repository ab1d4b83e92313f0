package inputcheck_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/inputcheck"
)

func TestCheckNamesTheField(t *testing.T) {
	prefs, err := structpb.NewStruct(map[string]any{"theme": map[string]any{"colour": "red\x00"}})
	if err != nil {
		t.Fatal(err)
	}
	badKey, _ := structpb.NewStruct(map[string]any{"a\x00b": 1})
	nan := &structpb.Struct{Fields: map[string]*structpb.Value{"n": structpb.NewNumberValue(math.NaN())}}
	cases := []struct {
		name string
		msg  proto.Message
		want string // substring of the message; "" for no error
	}{
		{"clean", &tenantv1.LoginRequest{TenantCode: "demo", Username: "admin", Password: "pässwörd 密码"}, ""},
		{"nul", &tenantv1.LoginRequest{Username: "ad\x00min"}, "username: must not contain NUL characters (U+0000) (rule string.no_nul)"},
		{"utf8", &tenantv1.LoginRequest{Password: "a\xffb"}, "password: must be valid UTF-8 (rule string.utf8)"},
		{"struct value", &chatv1.UpdateSessionRequest{Preferences: prefs}, "preferences.theme.colour: must not contain NUL"},
		{"struct key", &chatv1.UpdateSessionRequest{Preferences: badKey}, `preferences: key "a\x00b" must not contain NUL`},
		{"struct NaN", &chatv1.UpdateSessionRequest{Preferences: nan}, "preferences.n: must be a finite number"},
		{"list item", &crxv1.SyncMetricsRequest{Items: []*crxv1.MetricItem{{MetricKey: "ok"}, {MetricKey: "x\xc3"}}}, "items[1].metric_key: must be valid UTF-8"},
		{"map value", &crxv1.SyncMetricsRequest{Items: []*crxv1.MetricItem{{Dims: map[string]string{"k": "\x00"}}}}, `items[0].dims["k"]: must not contain NUL`},
		{"map key", &crxv1.SyncMetricsRequest{Items: []*crxv1.MetricItem{{Dims: map[string]string{"\xff": "v"}}}}, `items[0].dims: key "\xff" must be valid UTF-8`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := inputcheck.Check(c.msg)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if e, ok := err.(*apperr.Error); !ok || e.Kind != apperr.KindInvalid {
				t.Fatalf("not a 400: %#v", err)
			}
		})
	}
}

// The codec turns bytes protobuf refuses into a marked message that Check reports.
func TestCodecMarksUndecodableRequests(t *testing.T) {
	codec := inputcheck.Codec()
	// LoginRequest.username (field 2) holding 0xFF, which no Go client can send.
	raw := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "demo")
	raw = protowire.AppendBytes(protowire.AppendTag(raw, 2, protowire.BytesType), []byte("ad\xffmin"))
	var req tenantv1.LoginRequest
	if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &req); err != nil {
		t.Fatalf("codec should mark, not fail: %v", err)
	}
	err := inputcheck.Check(&req)
	if err == nil || !strings.Contains(err.Error(), "username: must be valid UTF-8") {
		t.Fatalf("got %v", err)
	}
	if st := err.(*apperr.Error).GRPCStatus(); st.Code() != codes.InvalidArgument {
		t.Fatalf("code %v", st.Code())
	}
	if req.GetTenantCode() != "" {
		t.Fatal("a marked message must carry nothing of the request")
	}

	// Nested: SyncMetricsRequest.items[].metric_key.
	item := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xc3})
	raw = protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), item)
	var sync crxv1.SyncMetricsRequest
	if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &sync); err != nil {
		t.Fatal(err)
	}
	if err := inputcheck.Check(&sync); err == nil || !strings.Contains(err.Error(), "items.metric_key: must be valid UTF-8") {
		t.Fatalf("got %v", err)
	}

	// Truncated bytes.
	var trunc tenantv1.LoginRequest
	if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0x05, 'a'})}, &trunc); err != nil {
		t.Fatal(err)
	}
	if err := inputcheck.Check(&trunc); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("got %v", err)
	}

	// Well-formed messages decode as with grpc-go's own codec.
	good, _ := proto.Marshal(&tenantv1.LoginRequest{TenantCode: "demo", Username: "admin"})
	var ok tenantv1.LoginRequest
	if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(good)}, &ok); err != nil || inputcheck.Check(&ok) != nil || ok.GetUsername() != "admin" {
		t.Fatalf("good message: %v %v", err, ok.String())
	}
	if encoding.GetCodecV2("proto") == nil {
		t.Fatal("grpc's proto codec is registered")
	}
}

func TestUnaryClientInterceptorRefusesBeforeSending(t *testing.T) {
	called := false
	err := inputcheck.UnaryClientInterceptor(t.Context(), "/m", &tenantv1.LoginRequest{Username: "\xff"}, nil, nil,
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
			called = true
			return nil
		})
	if called || status.Code(err) != codes.InvalidArgument {
		t.Fatalf("called=%v err=%v", called, err)
	}
}
