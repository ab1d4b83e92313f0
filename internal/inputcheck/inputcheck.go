// Package inputcheck refuses, in one place, the text a client may send but the stores cannot
// hold: a NUL character (PostgreSQL text cannot contain U+0000) and invalid UTF-8 (neither
// PostgreSQL nor protobuf strings can). Every request message is checked before any
// handler runs, whichever way it came:
//
//   - gRPC from the network: the server's codec (Codec) turns a message protobuf refuses to
//     decode (invalid UTF-8, malformed wire bytes) into an empty message marked with the
//     problem, and the server's interceptor answers it with InvalidArgument naming the field
//     (grpc-go itself would answer Internal);
//   - in-process calls and decoded messages: the interceptor walks every string of the
//     message (fields, list items, map keys and values, google.protobuf.Struct keys);
//   - the gateway's calls over a network connection: the client interceptor checks before
//     sending, since grpc-go cannot encode invalid UTF-8 and would fail with Internal.
//
// The answer is a 400 (InvalidArgument) naming the field, e.g. `name: must not contain NUL
// characters (U+0000)`. A REST body JSON cannot decode is named the same way
// (NamedDecodeError, jsonpath.go: the gateway's 400 names the path of the value at fault).
package inputcheck

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Rules of the violations this package reports.
const (
	RuleNoNUL      = "string.no_nul"
	RuleUTF8       = "string.utf8"
	RuleWellFormed = "message.well_formed"
	RuleFinite     = "number.finite"
)

// maxDepth bounds the walk; protobuf's own decoder stops nesting at 10,000.
const maxDepth = 200

// Check returns a 400 (an *apperr.Error) naming the first string of m that holds a NUL or
// invalid UTF-8, the decoding problem Codec marked m with, or nil.
func Check(m proto.Message) error {
	if m == nil {
		return nil
	}
	r := m.ProtoReflect()
	if !r.IsValid() {
		return nil
	}
	if err := decodeProblem(r); err != nil {
		return err
	}
	var w walker
	w.message(r, 0)
	return w.err
}

type walker struct {
	path []string
	err  error
}

func (w *walker) fail(rule, message string) {
	field := strings.Join(w.path, "")
	if field == "" {
		field = "request"
	}
	w.err = apperr.InvalidFields([]apperr.FieldViolation{{Field: field, Rule: rule, Message: message}})
}

func (w *walker) push(name string) {
	if len(w.path) > 0 {
		name = "." + name
	}
	w.path = append(w.path, name)
}

func (w *walker) pop() { w.path = w.path[:len(w.path)-1] }

// textProblem tells what is wrong with s for the stores, if anything.
func textProblem(s string) (rule, message string, bad bool) {
	if strings.IndexByte(s, 0) >= 0 {
		return RuleNoNUL, "must not contain NUL characters (U+0000)", true
	}
	if !utf8.ValidString(s) {
		return RuleUTF8, "must be valid UTF-8", true
	}
	return "", "", false
}

func (w *walker) str(s string) {
	if rule, msg, bad := textProblem(s); bad {
		w.fail(rule, msg)
	}
}

func (w *walker) message(m protoreflect.Message, depth int) {
	if depth > maxDepth {
		w.fail(RuleWellFormed, fmt.Sprintf("nested more than %d levels deep", maxDepth))
		return
	}
	// google.protobuf.Struct, Value and ListValue are JSON: the path names a Struct's keys
	// and a list's indexes as JSON does, not their protobuf fields.
	name := m.Descriptor().FullName()
	isStruct := name == "google.protobuf.Struct"
	isJSON := isStruct || name == "google.protobuf.Value" || name == "google.protobuf.ListValue"
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if !isJSON {
			w.push(string(fd.Name()))
			defer w.pop()
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && w.err == nil; i++ {
				w.path = append(w.path, "["+strconv.Itoa(i)+"]")
				w.value(fd, l.Get(i), depth)
				w.pop()
			}
		case fd.IsMap():
			w.mapEntries(fd, v.Map(), depth, isStruct)
		default:
			w.value(fd, v, depth)
		}
		return w.err == nil
	})
}

func (w *walker) mapEntries(fd protoreflect.FieldDescriptor, m protoreflect.Map, depth int, isStruct bool) {
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		key := k.String()
		if fd.MapKey().Kind() == protoreflect.StringKind {
			if rule, msg, bad := textProblem(key); bad {
				w.fail(rule, fmt.Sprintf("key %q %s", key, msg))
				return false
			}
		}
		if isStruct {
			w.push(key)
		} else {
			w.path = append(w.path, "["+strconv.Quote(key)+"]")
		}
		w.value(fd.MapValue(), v, depth)
		w.pop()
		return w.err == nil
	})
}

func (w *walker) value(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		w.str(v.String())
	case protoreflect.DoubleKind:
		// A Struct is JSON, which has no NaN or Infinity (a gRPC caller can send them;
		// storing the Struct as JSON would then fail).
		if f := v.Float(); fd.FullName() == "google.protobuf.Value.number_value" && (math.IsNaN(f) || math.IsInf(f, 0)) {
			w.fail(RuleFinite, "must be a finite number (JSON has no NaN or Infinity)")
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		w.message(v.Message(), depth+1)
	}
}

// UnaryClientInterceptor checks a request before it is encoded for the network (grpc-go
// cannot encode invalid UTF-8 and would answer Internal); the caller gets the 400.
func UnaryClientInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if m, ok := req.(proto.Message); ok {
		if err := Check(m); err != nil {
			return err.(*apperr.Error).GRPCStatus().Err()
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// StreamClientInterceptor checks each message a client stream sends, like
// UnaryClientInterceptor.
func StreamClientInterceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return checkedStream{s}, nil
}

type checkedStream struct{ grpc.ClientStream }

func (s checkedStream) SendMsg(m any) error {
	if pm, ok := m.(proto.Message); ok {
		if err := Check(pm); err != nil {
			return err.(*apperr.Error).GRPCStatus().Err()
		}
	}
	return s.ClientStream.SendMsg(m)
}

// DialOptions are the client interceptors for connections to other processes.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(UnaryClientInterceptor),
		grpc.WithChainStreamInterceptor(StreamClientInterceptor)}
}
