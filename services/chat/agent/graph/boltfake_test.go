package graph_test

// boltFake is a local server speaking Bolt 4.4 (handshake, chunked messages, PackStream;
// HELLO, BEGIN, RUN, PULL, DISCARD, COMMIT, ROLLBACK, RESET, GOODBYE) that answers the
// statements the Neo4j store sends (graph.Neo4j*) by running their meaning on an in-memory
// graph, and fails any other statement the way Neo4j does. It is not Neo4j: Cypher is
// recognised by its exact text, not parsed.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/shopmind/shopmind/services/chat/agent/graph"
)

type pstruct struct {
	tag    byte
	fields []any
}

// --- PackStream ---------------------------------------------------------------------

func unpack(r *bytes.Reader) (any, error) {
	m, err := r.ReadByte()
	if err != nil {
		return nil, err
	}
	size := func(n int) (int, error) {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return 0, err
		}
		switch n {
		case 1:
			return int(b[0]), nil
		case 2:
			return int(binary.BigEndian.Uint16(b)), nil
		}
		return int(binary.BigEndian.Uint32(b)), nil
	}
	str := func(n int) (any, error) {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return string(b), err
	}
	list := func(n int) (any, error) {
		out := make([]any, n)
		for i := range out {
			v, err := unpack(r)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	dict := func(n int) (any, error) {
		out := make(map[string]any, n)
		for range n {
			k, err := unpack(r)
			if err != nil {
				return nil, err
			}
			v, err := unpack(r)
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("map key %v", k)
			}
			out[ks] = v
		}
		return out, nil
	}
	switch {
	case m < 0x80:
		return int64(m), nil
	case m >= 0xF0:
		return int64(int8(m)), nil
	case m >= 0x80 && m <= 0x8F:
		return str(int(m & 0x0F))
	case m >= 0x90 && m <= 0x9F:
		return list(int(m & 0x0F))
	case m >= 0xA0 && m <= 0xAF:
		return dict(int(m & 0x0F))
	case m >= 0xB0 && m <= 0xBF:
		tag, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		fields, err := list(int(m & 0x0F))
		if err != nil {
			return nil, err
		}
		return &pstruct{tag: tag, fields: fields.([]any)}, nil
	}
	switch m {
	case 0xC0:
		return nil, nil
	case 0xC2:
		return false, nil
	case 0xC3:
		return true, nil
	case 0xC1:
		var f float64
		err := binary.Read(r, binary.BigEndian, &f)
		return f, err
	case 0xC8:
		var v int8
		err := binary.Read(r, binary.BigEndian, &v)
		return int64(v), err
	case 0xC9:
		var v int16
		err := binary.Read(r, binary.BigEndian, &v)
		return int64(v), err
	case 0xCA:
		var v int32
		err := binary.Read(r, binary.BigEndian, &v)
		return int64(v), err
	case 0xCB:
		var v int64
		err := binary.Read(r, binary.BigEndian, &v)
		return v, err
	case 0xD0, 0xD1, 0xD2:
		n, err := size(1 << (m - 0xD0))
		if err != nil {
			return nil, err
		}
		return str(n)
	case 0xD4, 0xD5, 0xD6:
		n, err := size(1 << (m - 0xD4))
		if err != nil {
			return nil, err
		}
		return list(n)
	case 0xD8, 0xD9, 0xDA:
		n, err := size(1 << (m - 0xD8))
		if err != nil {
			return nil, err
		}
		return dict(n)
	}
	return nil, fmt.Errorf("packstream marker %#x not supported by the fake", m)
}

func header(b *bytes.Buffer, n int, tiny, b8, b16, b32 byte) {
	switch {
	case n < 16:
		b.WriteByte(tiny | byte(n))
	case n < 256:
		b.WriteByte(b8)
		b.WriteByte(byte(n))
	case n < 65536:
		b.WriteByte(b16)
		_ = binary.Write(b, binary.BigEndian, uint16(n))
	default:
		b.WriteByte(b32)
		_ = binary.Write(b, binary.BigEndian, uint32(n))
	}
}

func pack(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteByte(0xC0)
	case bool:
		if x {
			b.WriteByte(0xC3)
		} else {
			b.WriteByte(0xC2)
		}
	case int:
		pack(b, int64(x))
	case int64:
		switch {
		case x >= -16 && x < 128:
			b.WriteByte(byte(int8(x)))
		case x >= math.MinInt32 && x <= math.MaxInt32:
			b.WriteByte(0xCA)
			_ = binary.Write(b, binary.BigEndian, int32(x))
		default:
			b.WriteByte(0xCB)
			_ = binary.Write(b, binary.BigEndian, x)
		}
	case float64:
		b.WriteByte(0xC1)
		_ = binary.Write(b, binary.BigEndian, x)
	case string:
		if len(x) < 16 {
			b.WriteByte(0x80 | byte(len(x)))
		} else {
			header(b, len(x), 0x80, 0xD0, 0xD1, 0xD2)
		}
		b.WriteString(x)
	case []string:
		l := make([]any, len(x))
		for i := range x {
			l[i] = x[i]
		}
		pack(b, l)
	case []any:
		header(b, len(x), 0x90, 0xD4, 0xD5, 0xD6)
		for _, e := range x {
			pack(b, e)
		}
	case map[string]any:
		header(b, len(x), 0xA0, 0xD8, 0xD9, 0xDA)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			pack(b, k)
			pack(b, x[k])
		}
	case *pstruct:
		b.WriteByte(0xB0 | byte(len(x.fields)))
		b.WriteByte(x.tag)
		for _, f := range x.fields {
			pack(b, f)
		}
	default:
		panic(fmt.Sprintf("fake cannot pack %T", v))
	}
}

// --- Bolt --------------------------------------------------------------------------

const (
	msgHello, msgGoodbye, msgReset, msgRun     = 0x01, 0x02, 0x0F, 0x10
	msgBegin, msgCommit, msgRollback, msgPull  = 0x11, 0x12, 0x13, 0x3F
	msgDiscard, msgRecord, msgSuccess, msgFail = 0x2F, 0x71, 0x70, 0x7F
	msgIgnored                                 = 0x7E
)

type fakeNode struct {
	tenant                          int64
	id, kind, name, nameLower, prop string
}

type fakeEdge struct {
	tenant         int64
	from, to, kind string
	weight         float64
}

type fakeData struct {
	nodes []fakeNode
	edges []fakeEdge
}

func (d fakeData) clone() fakeData {
	return fakeData{nodes: append([]fakeNode(nil), d.nodes...), edges: append([]fakeEdge(nil), d.edges...)}
}

type boltFake struct {
	t        *testing.T
	ln       net.Listener
	mu       sync.Mutex
	data     fakeData
	received []string // statements run, in order
	hellos   []map[string]any
}

func newBoltFake(t *testing.T) *boltFake {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &boltFake{t: t, ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *boltFake) uri() string { return "bolt://" + f.ln.Addr().String() }

func (f *boltFake) statements() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.received...)
}

func readMessage(r *bufio.Reader) (*pstruct, error) {
	var msg []byte
	for {
		var n uint16
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return nil, err
		}
		if n == 0 {
			if len(msg) == 0 {
				continue // a no-op chunk
			}
			break
		}
		chunk := make([]byte, n)
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, err
		}
		msg = append(msg, chunk...)
	}
	v, err := unpack(bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	s, ok := v.(*pstruct)
	if !ok {
		return nil, errors.New("message is not a structure")
	}
	return s, nil
}

func writeMessage(w io.Writer, tag byte, fields ...any) error {
	var b bytes.Buffer
	pack(&b, &pstruct{tag: tag, fields: fields})
	data := b.Bytes()
	var out bytes.Buffer
	for len(data) > 0 {
		n := min(len(data), 65535)
		_ = binary.Write(&out, binary.BigEndian, uint16(n))
		out.Write(data[:n])
		data = data[n:]
	}
	out.Write([]byte{0, 0})
	_, err := w.Write(out.Bytes())
	return err
}

// session is one connection's state.
type session struct {
	f      *boltFake
	tx     *fakeData // the open transaction's copy
	failed bool
	fields []string
	rows   [][]any
}

func (f *boltFake) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	hs := make([]byte, 20)
	if _, err := io.ReadFull(r, hs); err != nil || !bytes.Equal(hs[:4], []byte{0x60, 0x60, 0xB0, 0x17}) {
		return
	}
	if _, err := c.Write([]byte{0, 0, 4, 4}); err != nil { // Bolt 4.4
		return
	}
	s := &session{f: f}
	for {
		m, err := readMessage(r)
		if err != nil {
			return
		}
		if m.tag == msgGoodbye {
			return
		}
		if err := s.handle(c, m); err != nil {
			return
		}
	}
}

func (s *session) handle(w io.Writer, m *pstruct) error {
	if s.failed && m.tag != msgReset {
		return writeMessage(w, msgIgnored)
	}
	ok := func(meta map[string]any) error { return writeMessage(w, msgSuccess, meta) }
	switch m.tag {
	case msgHello:
		s.f.mu.Lock()
		s.f.hellos = append(s.f.hellos, m.fields[0].(map[string]any))
		s.f.mu.Unlock()
		return ok(map[string]any{"server": "Neo4j/4.4.0", "connection_id": "bolt-fake"})
	case msgReset:
		s.failed, s.tx, s.rows = false, nil, nil
		return ok(map[string]any{})
	case msgBegin:
		s.f.mu.Lock()
		d := s.f.data.clone()
		s.f.mu.Unlock()
		s.tx = &d
		return ok(map[string]any{})
	case msgCommit:
		if s.tx != nil {
			s.f.mu.Lock()
			s.f.data = *s.tx
			s.f.mu.Unlock()
		}
		s.tx = nil
		return ok(map[string]any{"bookmark": "fake:1"})
	case msgRollback:
		s.tx = nil
		return ok(map[string]any{})
	case msgRun:
		query, _ := m.fields[0].(string)
		params, _ := m.fields[1].(map[string]any)
		s.f.mu.Lock()
		s.f.received = append(s.f.received, query)
		auto := s.tx == nil
		if auto {
			d := s.f.data.clone()
			s.tx = &d
		}
		s.f.mu.Unlock()
		fields, rows, err := run(s.tx, query, params)
		if auto {
			s.f.mu.Lock()
			s.f.data = *s.tx
			s.f.mu.Unlock()
			s.tx = nil
		}
		if err != nil {
			s.failed = true
			return writeMessage(w, msgFail, map[string]any{"code": "Neo.ClientError.Statement.SyntaxError", "message": err.Error()})
		}
		s.fields, s.rows = fields, rows
		f := make([]any, len(fields))
		for i := range fields {
			f[i] = fields[i]
		}
		return ok(map[string]any{"fields": f, "t_first": int64(0)})
	case msgPull, msgDiscard:
		if m.tag == msgPull {
			for _, row := range s.rows {
				if err := writeMessage(w, msgRecord, row); err != nil {
					return err
				}
			}
		}
		s.rows = nil
		return ok(map[string]any{"has_more": false, "t_last": int64(0), "type": "rw", "db": "neo4j"})
	}
	s.failed = true
	return writeMessage(w, msgFail, map[string]any{"code": "Neo.ClientError.Request.Invalid", "message": fmt.Sprintf("message %#x", m.tag)})
}

// run gives the statements of the Neo4j store their meaning on d.
func run(d *fakeData, query string, p map[string]any) ([]string, [][]any, error) {
	tenant, _ := p["tenant"].(int64)
	switch query {
	case graph.Neo4jDeleteTenant:
		keep := d.nodes[:0]
		for _, n := range d.nodes {
			if n.tenant != tenant {
				keep = append(keep, n)
			}
		}
		d.nodes = keep
		edges := d.edges[:0]
		for _, e := range d.edges {
			if e.tenant != tenant {
				edges = append(edges, e)
			}
		}
		d.edges = edges
		return nil, nil, nil
	case graph.Neo4jCreateNodes:
		for _, x := range p["nodes"].([]any) {
			m := x.(map[string]any)
			d.nodes = append(d.nodes, fakeNode{tenant: tenant, id: m["id"].(string), kind: m["kind"].(string), name: m["name"].(string),
				nameLower: m["name_lower"].(string), prop: m["props"].(string)})
		}
		return nil, nil, nil
	case graph.Neo4jCreateEdges:
		has := map[string]bool{}
		for _, n := range d.nodes {
			if n.tenant == tenant {
				has[n.id] = true
			}
		}
		for _, x := range p["edges"].([]any) {
			m := x.(map[string]any)
			if has[m["from"].(string)] && has[m["to"].(string)] { // MATCH finds both or creates nothing
				d.edges = append(d.edges, fakeEdge{tenant: tenant, from: m["from"].(string), to: m["to"].(string), kind: m["kind"].(string), weight: m["weight"].(float64)})
			}
		}
		return nil, nil, nil
	case graph.Neo4jSearch:
		return search(d, tenant, p)
	case graph.Neo4jEdges:
		ids := map[string]bool{}
		for _, x := range p["ids"].([]any) {
			ids[x.(string)] = true
		}
		var edges []fakeEdge
		for _, e := range d.edges {
			if e.tenant == tenant && ids[e.from] && ids[e.to] {
				edges = append(edges, e)
			}
		}
		sort.Slice(edges, func(i, j int) bool {
			a, b := edges[i], edges[j]
			if a.kind != b.kind {
				return a.kind < b.kind
			}
			if a.from != b.from {
				return a.from < b.from
			}
			return a.to < b.to
		})
		rows := make([][]any, len(edges))
		for i, e := range edges {
			rows[i] = []any{e.from, e.to, e.kind, e.weight}
		}
		return []string{"from", "to", "kind", "weight"}, rows, nil
	}
	return nil, nil, fmt.Errorf("fake: statement not understood: %.80s", query)
}

func search(d *fakeData, tenant int64, p map[string]any) ([]string, [][]any, error) {
	keyword, lower := p["keyword"].(string), p["lower"].(string)
	limit, depth, max := int(p["limit"].(int64)), int(p["depth"].(int64)), int(p["max"].(int64))
	byID := map[string]fakeNode{}
	var seeds []fakeNode
	for _, n := range d.nodes {
		if n.tenant != tenant {
			continue
		}
		byID[n.id] = n
		if n.id == keyword || strings.Contains(n.nameLower, lower) {
			seeds = append(seeds, n)
		}
	}
	sort.Slice(seeds, func(i, j int) bool {
		a, b := seeds[i], seeds[j]
		if (a.id == keyword) != (b.id == keyword) {
			return a.id == keyword
		}
		if (a.nameLower == lower) != (b.nameLower == lower) {
			return a.nameLower == lower
		}
		if len([]rune(a.name)) != len([]rune(b.name)) {
			return len([]rune(a.name)) < len([]rune(b.name))
		}
		return a.id < b.id
	})
	seeds = seeds[:min(limit, len(seeds))]
	dist := map[string]int{}
	frontier := []string{}
	for _, s := range seeds {
		dist[s.id] = 0
		frontier = append(frontier, s.id)
	}
	for step := 1; step <= 2 && step <= depth; step++ {
		var next []string
		for _, id := range frontier {
			for _, e := range d.edges {
				if e.tenant != tenant {
					continue
				}
				other := ""
				switch id {
				case e.from:
					other = e.to
				case e.to:
					other = e.from
				}
				if _, seen := dist[other]; other != "" && !seen {
					dist[other] = step
					next = append(next, other)
				}
			}
		}
		frontier = next
	}
	var found []fakeNode
	for id := range dist {
		found = append(found, byID[id])
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if dist[a.id] != dist[b.id] {
			return dist[a.id] < dist[b.id]
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.id < b.id
	})
	found = found[:min(max, len(found))]
	rows := make([][]any, len(found))
	for i, n := range found {
		rows[i] = []any{n.id, n.kind, n.name, n.prop, int64(dist[n.id])}
	}
	return []string{"id", "kind", "name", "props", "depth"}, rows, nil
}
