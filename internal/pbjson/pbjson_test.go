package pbjson_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	_ "github.com/shopmind/shopmind/internal/contract/linked" // every descriptor of the contract
	"github.com/shopmind/shopmind/internal/pbjson"
)

// same requires pbjson's output to be protojson's, byte for byte once both are compacted
// (protojson randomly inserts spaces to discourage byte comparisons; json.Compact drops
// them), so values and key order are the same.
func same(t *testing.T, m proto.Message) {
	t.Helper()
	want, werr := pbjson.Options.Marshal(m)
	got, gerr := pbjson.Marshal(m)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s: protojson error %v, pbjson error %v", m.ProtoReflect().Descriptor().FullName(), werr, gerr)
	}
	if werr != nil {
		return
	}
	var w, g bytes.Buffer
	if err := json.Compact(&w, want); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&g, got); err != nil {
		t.Fatalf("%s: pbjson wrote invalid JSON %s: %v", m.ProtoReflect().Descriptor().FullName(), got, err)
	}
	if !bytes.Equal(w.Bytes(), g.Bytes()) {
		t.Fatalf("%s:\nprotojson %s\npbjson    %s", m.ProtoReflect().Descriptor().FullName(), w.Bytes(), g.Bytes())
	}
}

var samples = []string{"", "a", "demo", "上个月各类目的销售额", "quote \" back \\ slash", "ctl \x00\x01\x1f\t\n\r\b\f", "<html>&amp;", "\u2028\u2029", "emoji 🎉", "bad \xff utf8"}

// fill sets every field of m to random values, nesting up to depth.
func fill(r *rand.Rand, m protoreflect.Message, depth int) {
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if r.IntN(4) == 0 {
			continue // leave some unset
		}
		if od := fd.ContainingOneof(); od != nil && m.WhichOneof(od) != nil {
			continue
		}
		switch {
		case fd.IsList():
			list := m.Mutable(fd).List()
			for n := r.IntN(3); n > 0; n-- {
				if fd.Message() != nil {
					if depth == 0 {
						break
					}
					e := list.NewElement()
					fill(r, e.Message(), depth-1)
					list.Append(e)
					continue
				}
				list.Append(scalar(r, fd))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for n := r.IntN(3); n > 0; n-- {
				k := scalar(r, fd.MapKey()).MapKey()
				if fd.MapValue().Message() != nil {
					if depth == 0 {
						break
					}
					v := mp.NewValue()
					fill(r, v.Message(), depth-1)
					mp.Set(k, v)
					continue
				}
				mp.Set(k, scalar(r, fd.MapValue()))
			}
		case fd.Message() != nil:
			if depth == 0 {
				continue
			}
			fillMessage(r, m.Mutable(fd).Message(), depth-1)
		default:
			m.Set(fd, scalar(r, fd))
		}
	}
}

// fillMessage fills well-known types with valid (and sometimes invalid) values.
func fillMessage(r *rand.Rand, m protoreflect.Message, depth int) {
	switch v := m.Interface().(type) {
	case *timestamppb.Timestamp:
		v.Seconds, v.Nanos = r.Int64N(4e9)-1e9, int32([]int{0, 5e8, 123000, 7, -1}[r.IntN(5)])
	case *durationpb.Duration:
		v.Seconds = r.Int64N(2e5) - 1e5
		v.Nanos = int32([]int{0, 5e8, 123000, 7}[r.IntN(4)])
		if v.Seconds < 0 {
			v.Nanos = -v.Nanos
		}
	case *structpb.Value:
		proto.Merge(v, randomValue(r, depth))
	case *structpb.Struct:
		v.Fields = map[string]*structpb.Value{"a": randomValue(r, depth), samples[r.IntN(len(samples)-1)]: randomValue(r, depth)}
	default:
		fill(r, m, depth)
	}
}

func randomValue(r *rand.Rand, depth int) *structpb.Value {
	switch r.IntN(6) {
	case 0:
		return structpb.NewNullValue()
	case 1:
		return structpb.NewNumberValue([]float64{0, -1.5, 1e21, 1e-7, 123456789, math.NaN()}[r.IntN(6)])
	case 2:
		return structpb.NewStringValue(samples[r.IntN(len(samples))])
	case 3:
		return structpb.NewBoolValue(r.IntN(2) == 0)
	case 4:
		if depth > 0 {
			return structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{randomValue(r, depth-1), randomValue(r, depth-1)}})
		}
	}
	if depth > 0 {
		return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"k": randomValue(r, depth-1), "b": randomValue(r, depth-1)}})
	}
	return structpb.NewNumberValue(2)
}

func scalar(r *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32([]int32{0, -1, 7, math.MaxInt32, math.MinInt32}[r.IntN(5)])
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32([]uint32{0, 1, math.MaxUint32}[r.IntN(3)])
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{0, -1, 42, math.MaxInt64, math.MinInt64}[r.IntN(5)])
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64([]uint64{0, 1, math.MaxUint64}[r.IntN(3)])
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32([]float32{0, -1.5, 3.25e-7, 1e22, float32(math.Inf(1)), float32(math.NaN()), 0.1}[r.IntN(7)])
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64([]float64{0, -1.5, 3.25e-7, 1e21, 1e20, math.Inf(-1), math.NaN(), 0.1, 123456.789}[r.IntN(9)])
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(samples[r.IntN(len(samples))])
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(samples[r.IntN(len(samples))]))
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if r.IntN(5) == 0 {
			return protoreflect.ValueOfEnum(99) // unknown number
		}
		return protoreflect.ValueOfEnum(vals.Get(r.IntN(vals.Len())).Number())
	}
	panic("kind " + fd.Kind().String())
}

// Every message of the contract, filled at random many times, is written as protojson writes it.
func TestMatchesProtojson(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if !strings.HasPrefix(string(mt.Descriptor().FullName()), "shopmind.") {
			return true
		}
		n++
		same(t, mt.New().Interface()) // empty
		for range 60 {
			m := mt.New()
			fill(r, m, 3)
			same(t, m.Interface())
		}
		return true
	})
	if n < 100 {
		t.Fatalf("only %d contract messages found", n)
	}
}

// Well-known types on their own, with the edge values protojson formats specially.
func TestWellKnownTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		ts := &timestamppb.Timestamp{}
		fillMessage(r, ts.ProtoReflect(), 2)
		same(t, ts)
		d := &durationpb.Duration{}
		fillMessage(r, d.ProtoReflect(), 2)
		same(t, d)
		same(t, randomValue(r, 3))
	}
	for _, m := range []proto.Message{
		&timestamppb.Timestamp{Seconds: 253402300800}, &durationpb.Duration{Seconds: 1, Nanos: -1},
		wrapperspb.Int64(-5), wrapperspb.String("x\"y"), wrapperspb.Bytes([]byte{0, 255}), wrapperspb.Double(math.Inf(1)),
		&structpb.Value{}, &structpb.ListValue{}, &structpb.Struct{},
	} {
		same(t, m)
	}
}

func BenchmarkMarshal(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	mt, err := protoregistry.GlobalTypes.FindMessageByName("shopmind.tenant.v1.GetInfoResponse")
	if err != nil {
		b.Fatal(err)
	}
	m := mt.New()
	fill(r, m, 3)
	msg := m.Interface()
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = pbjson.Options.Marshal(msg)
		}
	})
	b.Run("pbjson", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for range b.N {
			buf, _ = pbjson.MarshalAppend(buf[:0], msg)
		}
	})
}
