// Package pbjson marshals protobuf messages to the JSON that protojson produces with
// UseProtoNames and EmitUnpopulated (the gateway's response format), faster.
//
// protojson ranges over every field through closures, sorts the fields of every message it
// writes and allocates per field; on the gateway's small responses that was a quarter of the
// edge's own cost per request. This encoder walks a plan cached per message type (fields in
// declaration order, each name pre-encoded) and appends to one buffer. Its output is the
// same JSON value, key order included (TestMatchesProtojson compares both over every message
// of the contract, randomly filled). Whatever it does not handle itself (google.protobuf.Any,
// FieldMask, extensions, invalid UTF-8, out-of-range timestamps, NaN in a Struct) makes it
// hand the whole message to protojson, so errors and edge cases are protojson's own.
package pbjson

import (
	"encoding/base64"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Options are the protojson options whose output this package reproduces.
var Options = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

// errFallback makes MarshalAppend defer to protojson.
var errFallback = errors.New("pbjson: handled by protojson")

// MarshalAppend appends the JSON of m to b.
func MarshalAppend(b []byte, m proto.Message) ([]byte, error) {
	if m == nil {
		return Options.MarshalAppend(b, m)
	}
	out, err := appendMessage(b, m.ProtoReflect())
	if err != nil {
		return Options.MarshalAppend(b, m)
	}
	return out, nil
}

// Marshal returns the JSON of m.
func Marshal(m proto.Message) ([]byte, error) { return MarshalAppend(make([]byte, 0, 256), m) }

type wkt int

const (
	wktNone wkt = iota
	wktUnsupported
	wktTimestamp
	wktDuration
	wktWrapper
	wktStruct
	wktValue
	wktListValue
	wktEmpty
)

func wktOf(name protoreflect.FullName) wkt {
	if !strings.HasPrefix(string(name), "google.protobuf.") {
		return wktNone
	}
	switch name.Name() {
	case "Timestamp":
		return wktTimestamp
	case "Duration":
		return wktDuration
	case "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value",
		"BoolValue", "StringValue", "BytesValue":
		return wktWrapper
	case "Struct":
		return wktStruct
	case "Value":
		return wktValue
	case "ListValue":
		return wktListValue
	case "Empty":
		return wktEmpty
	case "Any", "FieldMask":
		return wktUnsupported
	}
	return wktNone
}

// plan is how one message type is written.
type plan struct {
	wkt    wkt
	fields []fieldPlan
}

type fieldPlan struct {
	fd protoreflect.FieldDescriptor
	// key is `"name":`, with a leading comma for every field but the first.
	key      []byte
	keyFirst []byte
	oneof    bool // in a oneof (real or proto3 optional): written only when set
	presence bool // unset means null
}

var plans sync.Map // protoreflect.FullName → *plan

func planOf(md protoreflect.MessageDescriptor) *plan {
	if p, ok := plans.Load(md.FullName()); ok {
		return p.(*plan)
	}
	p := &plan{wkt: wktOf(md.FullName())}
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		name, _ := appendString(nil, fd.TextName())
		name = append(name, ':')
		p.fields = append(p.fields, fieldPlan{fd: fd, keyFirst: name, key: append([]byte{','}, name...),
			oneof: fd.ContainingOneof() != nil, presence: fd.HasPresence() && !fd.IsList() && !fd.IsMap()})
	}
	plans.Store(md.FullName(), p)
	return p
}

func appendMessage(b []byte, m protoreflect.Message) ([]byte, error) {
	p := planOf(m.Descriptor())
	switch p.wkt {
	case wktNone:
	case wktUnsupported:
		return b, errFallback
	default:
		return appendWellKnown(b, m, p.wkt)
	}
	if m.Descriptor().ExtensionRanges().Len() > 0 { // extensions: protojson's business
		return b, errFallback
	}
	b = append(b, '{')
	first := true
	var err error
	for i := range p.fields {
		f := &p.fields[i]
		set := true
		if f.oneof || f.presence {
			set = m.Has(f.fd)
			if !set && f.oneof {
				continue
			}
		}
		if first {
			b = append(b, f.keyFirst...)
			first = false
		} else {
			b = append(b, f.key...)
		}
		if !set { // a field with presence, unset
			b = append(b, "null"...)
			continue
		}
		if b, err = appendField(b, f.fd, m.Get(f.fd)); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendField(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, error) {
	var err error
	switch {
	case fd.IsList():
		list := v.List()
		b = append(b, '[')
		for i := 0; i < list.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendSingular(b, fd, list.Get(i)); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case fd.IsMap():
		return appendMap(b, fd, v.Map())
	default:
		return appendSingular(b, fd, v)
	}
}

func appendMap(b []byte, fd protoreflect.FieldDescriptor, m protoreflect.Map) ([]byte, error) {
	keys := make([]protoreflect.MapKey, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	kd, vd := fd.MapKey(), fd.MapValue()
	slices.SortFunc(keys, func(x, y protoreflect.MapKey) int { return compareKeys(kd.Kind(), x, y) })
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendString(b, k.String()); err != nil {
			return b, err
		}
		b = append(b, ':')
		if b, err = appendSingular(b, vd, m.Get(k)); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// compareKeys is protojson's map key order: false before true, numbers ascending, strings
// by their bytes.
func compareKeys(kind protoreflect.Kind, x, y protoreflect.MapKey) int {
	switch kind {
	case protoreflect.BoolKind:
		xb, yb := x.Bool(), y.Bool()
		switch {
		case xb == yb:
			return 0
		case !xb:
			return -1
		}
		return 1
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		xi, yi := x.Int(), y.Int()
		switch {
		case xi < yi:
			return -1
		case xi > yi:
			return 1
		}
		return 0
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		xu, yu := x.Uint(), y.Uint()
		switch {
		case xu < yu:
			return -1
		case xu > yu:
			return 1
		}
		return 0
	}
	return strings.Compare(x.String(), y.String())
}

func appendSingular(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		b = append(b, '"')
		return append(strconv.AppendInt(b, v.Int(), 10), '"'), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = append(b, '"')
		return append(strconv.AppendUint(b, v.Uint(), 10), '"'), nil
	case protoreflect.FloatKind:
		return appendFloat(b, v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64), nil
	case protoreflect.StringKind:
		return appendString(b, v.String())
	case protoreflect.BytesKind:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes())
		return append(b, '"'), nil
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return append(b, "null"...), nil
		}
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendString(b, string(ev.Name()))
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), nil
	case protoreflect.MessageKind:
		return appendMessage(b, v.Message())
	}
	return b, errFallback
}

// appendFloat writes a float as protojson does (encoding/json's format; NaN and the
// infinities as strings).
func appendFloat(b []byte, n float64, bitSize int) []byte {
	switch {
	case math.IsNaN(n):
		return append(b, `"NaN"`...)
	case math.IsInf(n, +1):
		return append(b, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(n); abs != 0 {
		if bitSize == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bitSize == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, n, format, -1, bitSize)
	if format == 'e' { // e-07 → e-7
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString writes a JSON string as protojson does: only '"', '\\' and control
// characters escaped; invalid UTF-8 is protojson's error.
func appendString(b []byte, s string) ([]byte, error) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return b, errFallback
			}
			i += n
			continue
		}
		if c >= ' ' && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '\\')
		switch c {
		case '"', '\\':
			b = append(b, c)
		case '\b':
			b = append(b, 'b')
		case '\f':
			b = append(b, 'f')
		case '\n':
			b = append(b, 'n')
		case '\r':
			b = append(b, 'r')
		case '\t':
			b = append(b, 't')
		default:
			b = append(b, 'u')
			b = append(b, "0000"[1+(bits.Len32(uint32(c))-1)/4:]...)
			b = strconv.AppendUint(b, uint64(c), 16)
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}

const (
	maxTimestampSeconds = 253402300799 // 9999-12-31T23:59:59Z
	minTimestampSeconds = -62135596800 // 0001-01-01T00:00:00Z
	maxDurationSeconds  = 315576000000
)

func appendWellKnown(b []byte, m protoreflect.Message, kind wkt) ([]byte, error) {
	fds := m.Descriptor().Fields()
	switch kind {
	case wktTimestamp:
		secs, nanos := m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int()
		if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos >= 1e9 {
			return b, errFallback
		}
		x := time.Unix(secs, nanos).UTC().Format("2006-01-02T15:04:05.000000000")
		x = strings.TrimSuffix(x, "000")
		x = strings.TrimSuffix(x, "000")
		x = strings.TrimSuffix(x, ".000")
		b = append(b, '"')
		b = append(b, x...)
		return append(b, `Z"`...), nil
	case wktDuration:
		secs, nanos := m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int()
		if secs < -maxDurationSeconds || secs > maxDurationSeconds || nanos <= -1e9 || nanos >= 1e9 ||
			secs > 0 && nanos < 0 || secs < 0 && nanos > 0 {
			return b, errFallback
		}
		b = append(b, '"')
		if secs < 0 || nanos < 0 {
			b = append(b, '-')
			secs, nanos = -secs, -nanos
		}
		b = strconv.AppendInt(b, secs, 10)
		frac := strconv.FormatInt(nanos+1e9, 10)[1:] // nine digits; 0, 3 or 6 of them kept, as protojson
		frac = strings.TrimSuffix(strings.TrimSuffix(frac, "000"), "000")
		if frac != "000" {
			b = append(append(b, '.'), frac...)
		}
		return append(b, `s"`...), nil
	case wktWrapper:
		return appendSingular(b, fds.ByNumber(1), m.Get(fds.ByNumber(1)))
	case wktEmpty:
		return append(b, "{}"...), nil
	case wktStruct:
		return appendMap(b, fds.ByNumber(1), m.Get(fds.ByNumber(1)).Map())
	case wktListValue:
		return appendField(b, fds.ByNumber(1), m.Get(fds.ByNumber(1)))
	case wktValue:
		od := m.Descriptor().Oneofs().ByName("kind")
		fd := m.WhichOneof(od)
		if fd == nil {
			return b, errFallback // protojson: "google.protobuf.Value: none of the oneof fields is set"
		}
		v := m.Get(fd)
		if fd.Kind() == protoreflect.DoubleKind && (math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)) {
			return b, errFallback // protojson refuses them in a Value
		}
		return appendSingular(b, fd, v)
	}
	return b, errFallback
}
