//go:build platform

package badinput

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/shopmind/shopmind/internal/restapi"
)

// binding is the RPC behind a REST operation and the request field its body carries.
type binding struct {
	method protoreflect.MethodDescriptor
	body   string // "*", a field name, or "" for none
}

var templateVar = regexp.MustCompile(`\{([^}=]+)(=[^}]*)?\}`)

// httpBindings maps "METHOD /path/{var}" to the RPC, from the google.api.http options.
func httpBindings() map[string]binding {
	out := map[string]binding{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
				if rule == nil {
					continue
				}
				for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					verb, path, ok := restapi.HTTPPattern(r)
					if !ok {
						continue
					}
					out[verb+" "+templateVar.ReplaceAllString(path, "{$1}")] = binding{method: md, body: r.GetBody()}
				}
			}
		}
		return true
	})
	return out
}

// bodyDescriptor is the message an operation's body holds, or nil.
func (b binding) bodyDescriptor() protoreflect.MessageDescriptor {
	switch b.body {
	case "":
		return nil
	case "*":
		return b.method.Input()
	}
	if fd := b.method.Input().Fields().ByName(protoreflect.Name(b.body)); fd != nil {
		return fd.Message()
	}
	return nil
}

// validBody is a body the operation's rules accept as far as they can be read: the body
// message filled by fillValid without the fields the path carries, in protojson with proto
// field names (as the OpenAPI document names them).
func validBody(b binding, op *operation) *jnode {
	md := b.bodyDescriptor()
	if md == nil {
		return nil
	}
	msg := dynamicpb.NewMessage(md)
	fillValid(msg, 0)
	if strings.HasPrefix(string(b.method.Name()), "Delete") {
		retarget(msg)
	}
	if b.body == "*" {
		for _, p := range op.PathParams {
			if fd := md.Fields().ByName(protoreflect.Name(p.Name)); fd != nil {
				msg.Clear(fd)
			}
		}
		for _, p := range op.Query {
			if fd := md.Fields().ByName(protoreflect.Name(p.Name)); fd != nil {
				msg.Clear(fd)
			}
		}
	}
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return fromJSON(v)
}

func fromJSON(v any) *jnode {
	switch x := v.(type) {
	case map[string]any:
		n := &jnode{kind: 'o'}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n.keys, n.vals = append(n.keys, k), append(n.vals, fromJSON(x[k]))
		}
		return n
	case []any:
		n := &jnode{kind: 'a'}
		for _, e := range x {
			n.vals = append(n.vals, fromJSON(e))
		}
		return n
	case json.Number:
		return rawNode(x.String())
	}
	return valueNode(v)
}

// withoutOneofSiblings returns n without the members of a oneof that the field at path
// belongs to, other than that field, at every level of path (so a value put there does not
// make the oneof doubly set).
func withoutOneofSiblings(n *jnode, md protoreflect.MessageDescriptor, path []any) *jnode {
	if n == nil || n.kind != 'o' || md == nil || len(path) == 0 {
		return n
	}
	key, ok := path[0].(string)
	if !ok {
		return n
	}
	fd := md.Fields().ByName(protoreflect.Name(key))
	if fd == nil {
		return n
	}
	drop := map[string]bool{}
	if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
		for i := 0; i < o.Fields().Len(); i++ {
			if f := o.Fields().Get(i); f != fd {
				drop[string(f.Name())], drop[f.JSONName()] = true, true
			}
		}
	}
	c := &jnode{kind: 'o'}
	for i, k := range n.keys {
		if drop[k] {
			continue
		}
		v := n.vals[i]
		if k == key {
			v = descend(v, fd, path[1:])
		}
		c.keys, c.vals = append(c.keys, k), append(c.vals, v)
	}
	return c
}

// descend applies withoutOneofSiblings below field fd's value v.
func descend(v *jnode, fd protoreflect.FieldDescriptor, rest []any) *jnode {
	if len(rest) == 0 || v == nil || v.kind == 'r' {
		return v
	}
	var elem protoreflect.MessageDescriptor
	switch {
	case fd.IsMap():
		elem = fd.MapValue().Message()
	case fd.IsList():
		elem = fd.Message()
	default:
		if fd.Message() == nil || strings.HasPrefix(string(fd.Message().FullName()), "google.protobuf.") {
			return v
		}
		return withoutOneofSiblings(v, fd.Message(), rest)
	}
	if elem == nil || strings.HasPrefix(string(elem.FullName()), "google.protobuf.") {
		return v
	}
	c := &jnode{kind: v.kind, keys: append([]string(nil), v.keys...), vals: append([]*jnode(nil), v.vals...)}
	switch k := rest[0].(type) {
	case int:
		if v.kind == 'a' && k < len(c.vals) {
			c.vals[k] = withoutOneofSiblings(c.vals[k], elem, rest[1:])
		}
	case string:
		for i, key := range c.keys {
			if key == k && v.kind == 'o' {
				c.vals[i] = withoutOneofSiblings(c.vals[i], elem, rest[1:])
			}
		}
	}
	return c
}
