package inputcheck

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shopmind/shopmind/internal/apperr"
)

// markerField is the unknown field Codec leaves on a message it could not decode; its value
// is the problem, as text. 536870911 is the largest field number protobuf allows; no
// ShopMind message uses it.
const markerField protowire.Number = 536870911

// Codec is the server's protobuf codec: grpc-go's own, except that a request protobuf
// refuses to decode becomes an empty message marked with the problem instead of a decoding
// error, which grpc-go would answer with codes.Internal before any interceptor ran. Check
// reports the mark as InvalidArgument naming the field.
func Codec() encoding.CodecV2 {
	return codec{encoding.GetCodecV2("proto")}
}

type codec struct{ encoding.CodecV2 }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	buf := data.Materialize()
	problem := describeWire(m.ProtoReflect().Descriptor(), buf, "", 0)
	if problem == "" {
		problem = "request: not a well-formed protobuf message"
	}
	proto.Reset(m)
	r := m.ProtoReflect()
	r.SetUnknown(protowire.AppendString(protowire.AppendTag(nil, markerField, protowire.BytesType), problem))
	return nil
}

// decodeProblem returns the 400 for a message Codec marked, or nil.
func decodeProblem(r protoreflect.Message) error {
	unknown := r.GetUnknown()
	for len(unknown) > 0 {
		num, typ, n := protowire.ConsumeTag(unknown)
		if n < 0 {
			return nil
		}
		unknown = unknown[n:]
		if num == markerField && typ == protowire.BytesType {
			problem, n := protowire.ConsumeString(unknown)
			if n < 0 {
				return nil
			}
			return apperr.New(apperr.KindInvalid, "invalid request: %s", problem)
		}
		n = protowire.ConsumeFieldValue(num, typ, unknown)
		if n < 0 {
			return nil
		}
		unknown = unknown[n:]
	}
	return nil
}

// describeWire finds the first string field of b (a message of type md) that is not valid
// UTF-8, or the first malformed bytes, and says where ("" when it finds nothing).
func describeWire(md protoreflect.MessageDescriptor, b []byte, path string, depth int) string {
	if depth > maxDepth {
		return path + ": nested too deep"
	}
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Sprintf("%s: malformed protobuf bytes", orRequest(path))
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if typ == protowire.BytesType && fd != nil {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Sprintf("%s: malformed protobuf bytes", join(string(fd.Name())))
			}
			b = b[n:]
			name := join(string(fd.Name()))
			switch {
			case fd.Kind() == protoreflect.StringKind && !utf8.Valid(v):
				return name + ": must be valid UTF-8 (rule " + RuleUTF8 + ")"
			case fd.IsMap():
				if p := describeWire(fd.Message(), v, name, depth+1); p != "" {
					return p
				}
			case fd.Kind() == protoreflect.MessageKind:
				if p := describeWire(fd.Message(), v, name, depth+1); p != "" {
					return p
				}
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Sprintf("%s: malformed protobuf bytes", orRequest(path))
		}
		b = b[n:]
	}
	return ""
}

func orRequest(path string) string {
	if path == "" {
		return "request"
	}
	return path
}
