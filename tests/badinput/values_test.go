//go:build platform

package badinput

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The baselines: messages filled with values their protovalidate rules accept where the
// rules say enough, so that a hostile value in one field gets past the others and reaches
// the handlers and the store.

func rulesOf(fd protoreflect.FieldDescriptor) *validate.FieldRules {
	r, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	return r
}

// fillValid sets every field of m (bounded depth, the first member of each oneof).
func fillValid(m protoreflect.Message, depth int) {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		m.Set(md.Fields().ByName("seconds"), protoreflect.ValueOfInt64(1704067200))
		return
	case "google.protobuf.FieldMask", "google.protobuf.Any", "google.protobuf.Duration":
		return
	}
	if depth > 3 {
		return
	}
	seen := map[protoreflect.FullName]bool{}
	var mask protoreflect.FieldDescriptor
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			if seen[o.FullName()] {
				continue
			}
			seen[o.FullName()] = true
		}
		r := rulesOf(fd)
		switch {
		case fd.Name() == "conversation_id" && r.GetIgnore() == validate.Ignore_IGNORE_IF_ZERO_VALUE:
			// optional: empty starts a new conversation, any other id is a 404
		case fd.Message() != nil && fd.Message().FullName() == "google.protobuf.FieldMask":
			mask = fd
		case fd.IsMap():
			if fd.MapKey().Kind() != protoreflect.StringKind {
				continue
			}
			mp := m.Mutable(fd).Map()
			k := protoreflect.ValueOfString(placeholder).MapKey()
			if fd.MapValue().Message() != nil {
				fillValid(mp.Mutable(k).Message(), depth+1)
			} else {
				mp.Set(k, validScalar(fd.MapValue(), r.GetMap().GetValues(), 0))
			}
		case fd.IsList():
			n := max(1, int(r.GetRepeated().GetMinItems()))
			l := m.Mutable(fd).List()
			for j := range n {
				if fd.Message() != nil {
					fillValid(l.AppendMutable().Message(), depth+1)
				} else {
					l.Append(validScalar(fd, r.GetRepeated().GetItems(), j))
				}
			}
		case fd.Message() != nil:
			fillValid(m.Mutable(fd).Message(), depth+1)
			if fd.Message().FullName() == "google.protobuf.Timestamp" && endish(fd.Name()) {
				ts := m.Mutable(fd).Message()
				ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1704067200+30*86400))
			}
		default:
			m.Set(fd, validScalar(fd, r, 0))
		}
	}
	if mask != nil { // name the fields just set: those of the message sent along, else the siblings
		paths := maskPaths(m, mask)
		if in := rulesOf(mask).GetFieldMask().GetIn(); len(in) > 0 {
			paths = in
		}
		fm := m.Mutable(mask).Message()
		l := fm.Mutable(fm.Descriptor().Fields().ByName("paths")).List()
		for _, p := range paths {
			l.Append(protoreflect.ValueOfString(p))
		}
	}
}

func endish(name protoreflect.Name) bool {
	n := string(name)
	return strings.Contains(n, "end") || strings.HasSuffix(n, "_to") || strings.Contains(n, "until")
}

func maskPaths(m protoreflect.Message, mask protoreflect.FieldDescriptor) []string {
	md := m.Descriptor()
	var siblings []string
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		if fd == mask || fd.Name() == "id" || !m.Has(fd) {
			continue
		}
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() && fd.Message().FullName() != "google.protobuf.Timestamp" &&
			!strings.HasPrefix(string(fd.Message().FullName()), "google.protobuf.") {
			var inner []string
			sub := m.Get(fd).Message()
			for j := 0; j < sub.Descriptor().Fields().Len(); j++ {
				f := sub.Descriptor().Fields().Get(j)
				if sub.Has(f) && f.Name() != "id" {
					inner = append(inner, string(f.Name()))
				}
			}
			return inner
		}
		siblings = append(siblings, string(fd.Name()))
	}
	return siblings
}

// validScalar is a value of a scalar field its rules accept; variant makes list items differ.
func validScalar(fd protoreflect.FieldDescriptor, r *validate.FieldRules, variant int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(validString(fd, r.GetString_(), variant))
	case protoreflect.EnumKind:
		er := r.GetEnum()
		if in := er.GetIn(); len(in) > 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(in[0]))
		}
		vals := fd.Enum().Values()
		if vals.Len() > 1 {
			return protoreflect.ValueOfEnum(vals.Get(1).Number())
		}
		return protoreflect.ValueOfEnum(0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		ir := r.GetInt32()
		v := int64(1 + variant)
		if len(ir.GetExample()) > 0 {
			v = int64(ir.GetExample()[0])
		}
		if len(ir.GetIn()) > 0 {
			v = int64(ir.GetIn()[0])
		}
		v = bound(v, ir.HasGt(), int64(ir.GetGt())+1, ir.HasGte(), int64(ir.GetGte()), ir.HasLt(), int64(ir.GetLt())-1, ir.HasLte(), int64(ir.GetLte()))
		return protoreflect.ValueOfInt32(int32(v))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		ir := r.GetInt64()
		v := int64(1 + variant)
		if len(ir.GetExample()) > 0 {
			v = ir.GetExample()[0]
		}
		if len(ir.GetIn()) > 0 {
			v = ir.GetIn()[0]
		}
		v = bound(v, ir.HasGt(), ir.GetGt()+1, ir.HasGte(), ir.GetGte(), ir.HasLt(), ir.GetLt()-1, ir.HasLte(), ir.GetLte())
		return protoreflect.ValueOfInt64(v)
	case protoreflect.DoubleKind:
		dr := r.GetDouble()
		v := 1.5
		if dr.HasGte() && v < dr.GetGte() || dr.HasGt() && v <= dr.GetGt() {
			v = max(dr.GetGte(), dr.GetGt()) + 1
		}
		if dr.HasLte() && v > dr.GetLte() || dr.HasLt() && v >= dr.GetLt() {
			v = min(dr.GetLte(), dr.GetLt())
		}
		return protoreflect.ValueOfFloat64(v)
	}
	return scalar(fd)
}

func bound(v int64, hasGt bool, gt int64, hasGte bool, gte int64, hasLt bool, lt int64, hasLte bool, lte int64) int64 {
	if hasGt && v < gt {
		v = gt
	}
	if hasGte && v < gte {
		v = gte
	}
	if hasLt && v > lt {
		v = lt
	}
	if hasLte && v > lte {
		v = lte
	}
	return v
}

var candidates = []string{placeholder, "sweep_1", "Sweep", "1", "SWEEP", "sweep-1", "a", "sweep:list", "2024-01-02",
	"2024-01-02T03:04:05Z", baseUUID, "sweep@example.com", "https://example.com/sweep", "sweep.example.com"}

func validString(fd protoreflect.FieldDescriptor, r *validate.StringRules, variant int) string {
	name := string(fd.Name())
	pick := func(s string) string {
		if variant > 0 {
			return s + strings.Repeat("x", variant)
		}
		return s
	}
	switch {
	case r == nil:
	case len(r.GetExample()) > 0:
		return r.GetExample()[0]
	case r.HasConst():
		return r.GetConst()
	case len(r.GetIn()) > 0:
		return r.GetIn()[min(variant, len(r.GetIn())-1)]
	case r.GetEmail():
		return pick("sweep") + "@example.com"
	case r.GetUuid():
		return baseUUID
	case r.GetTuuid():
		return strings.ReplaceAll(baseUUID, "-", "")
	case r.GetHostname():
		return "example.com"
	case r.GetUri(), r.GetUriRef():
		return "https://example.com/" + pick("sweep")
	case r.GetIp(), r.GetIpv4(), r.GetAddress():
		return "192.0.2.1"
	case r.GetIpv6():
		return "2001:db8::1"
	case r.GetHostAndPort():
		return "example.com:443"
	case r.GetUlid():
		return "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	}
	var re *regexp.Regexp
	if r.HasPattern() {
		re, _ = regexp.Compile(r.GetPattern())
	}
	ok := func(s string) bool {
		n := uint64(utf8.RuneCountInString(s))
		return (!r.HasMinLen() || n >= r.GetMinLen()) && (!r.HasMaxLen() || n <= r.GetMaxLen()) &&
			(!r.HasLen() || n == r.GetLen()) && (re == nil || re.MatchString(s)) &&
			strings.HasPrefix(s, r.GetPrefix()) && strings.HasSuffix(s, r.GetSuffix()) && strings.Contains(s, r.GetContains())
	}
	first := []string{}
	switch {
	case strings.Contains(name, "email"):
		first = append(first, "sweep@example.com")
	case strings.Contains(name, "url"):
		first = append(first, "https://example.com/sweep")
	case strings.HasSuffix(name, "time") || strings.HasSuffix(name, "date"):
		first = append(first, "2024-01-02T03:04:05Z", "2024-01-02")
	case strings.Contains(name, "conversation") || strings.Contains(name, "uuid"):
		first = append(first, baseUUID)
	case strings.HasSuffix(name, "order"):
		first = append(first, "asc")
	case strings.Contains(name, "permission"):
		first = append(first, "basic:goods:list")
	}
	for _, c := range append(first, candidates...) {
		c = r.GetPrefix() + pick(c) + r.GetSuffix()
		if ok(c) {
			return c
		}
	}
	s := r.GetPrefix() + pick(placeholder) + r.GetSuffix()
	for uint64(utf8.RuneCountInString(s)) < max(r.GetMinLen(), r.GetLen()) {
		s += "x"
	}
	return s
}

// missingID replaces the ids of a delete's baseline, so that it does not delete the rows the
// other operations' baselines name.
const missingID = 987654321

func retarget(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
		case fd.IsList() && fd.Kind() == protoreflect.Int64Kind:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				l.Set(i, protoreflect.ValueOfInt64(missingID+int64(i)))
			}
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				retarget(v.List().Get(i).Message())
			}
		case fd.Kind() == protoreflect.Int64Kind:
			m.Set(fd, protoreflect.ValueOfInt64(missingID))
		case fd.Message() != nil:
			retarget(v.Message())
		}
		return true
	})
}
