//go:build platform

package badinput

import (
	"bytes"
	"encoding/json"
)

// jnode is a JSON value whose leaves are raw text, so a test can put bytes encoding/json
// would refuse to write (0xFF, a lone surrogate escape) anywhere in a document.
type jnode struct {
	kind byte // 'o' object, 'a' array, 'r' raw
	keys []string
	vals []*jnode
	raw  []byte
}

func rawNode(s string) *jnode { return &jnode{kind: 'r', raw: []byte(s)} }

func valueNode(v any) *jnode {
	b, _ := json.Marshal(v)
	return &jnode{kind: 'r', raw: b}
}

func (n *jnode) encode(buf *bytes.Buffer) {
	switch n.kind {
	case 'o':
		buf.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			n.vals[i].encode(buf)
		}
		buf.WriteByte('}')
	case 'a':
		buf.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				buf.WriteByte(',')
			}
			v.encode(buf)
		}
		buf.WriteByte(']')
	default:
		buf.Write(n.raw)
	}
}

func (n *jnode) bytes() []byte {
	var buf bytes.Buffer
	n.encode(&buf)
	return buf.Bytes()
}

// with returns a copy of n with the value at path (object keys and array indexes) replaced
// by v, creating missing containers; n is not changed.
func (n *jnode) with(path []any, v *jnode) *jnode {
	if len(path) == 0 {
		return v
	}
	switch p := path[0].(type) {
	case string:
		c := &jnode{kind: 'o'}
		if n != nil && n.kind == 'o' {
			c.keys = append([]string(nil), n.keys...)
			c.vals = append([]*jnode(nil), n.vals...)
		}
		for i, k := range c.keys {
			if k == p {
				c.vals[i] = c.vals[i].with(path[1:], v)
				return c
			}
		}
		c.keys = append(c.keys, p)
		c.vals = append(c.vals, (*jnode)(nil).with(path[1:], v))
		return c
	case int:
		c := &jnode{kind: 'a'}
		if n != nil && n.kind == 'a' {
			c.vals = append([]*jnode(nil), n.vals...)
		}
		for len(c.vals) <= p {
			c.vals = append(c.vals, rawNode("null"))
		}
		c.vals[p] = c.vals[p].with(path[1:], v)
		return c
	}
	return n
}
