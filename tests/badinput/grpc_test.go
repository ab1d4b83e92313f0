//go:build platform

package badinput

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	_ "github.com/shopmind/shopmind/internal/contract/linked" // every descriptor of the contract
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

const (
	grpcTimeout  = 20 * time.Second
	grpcOversize = 5 << 20 // above grpc-go's 4 MiB default receive limit
	// utf8Marker is a string field's placeholder, replaced in the encoded message by
	// utf8Broken (same length, so every length prefix stays right).
	utf8Marker = "SWEEP-UTF8-MARK!"
	utf8Broken = "SWEEP-\xff\xfeTF8-MARK"
)

// rawFrame is an already encoded message: rawCodec sends and receives bytes as they are,
// which is how a request with invalid UTF-8 (grpc-go's proto codec refuses to encode it)
// reaches the server.
type rawFrame struct{ b []byte }

type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*rawFrame).b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*rawFrame).b = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// grpcMethod is one RPC of the contract.
type grpcMethod struct {
	full      string // /package.Service/Method
	in        protoreflect.MessageDescriptor
	streaming bool
	revokes   bool
}

// grpcCase is one hostile call.
type grpcCase struct {
	m        *grpcMethod
	kind     string
	field    string
	mustFail bool
	wire     []byte
	words    []string
}

func contractMethods() []*grpcMethod {
	var out []*grpcMethod
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			if !strings.HasPrefix(string(sd.FullName()), "shopmind.") { // not grpc.health, reflection
				continue
			}
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				if md.IsStreamingClient() {
					continue
				}
				out = append(out, &grpcMethod{full: "/" + string(sd.FullName()) + "/" + string(md.Name()), in: md.Input(),
					streaming: md.IsStreamingServer(), revokes: md.Name() == "Logout"})
			}
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].full < out[j].full })
	return out
}

func scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(placeholder)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(placeholder))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(false)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if vals.Len() > 1 {
			return protoreflect.ValueOfEnum(vals.Get(1).Number())
		}
		return protoreflect.ValueOfEnum(0)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(1.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(1.5)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(1)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(1)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(1)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(1)
	}
	return protoreflect.Value{}
}

// gsite is a field the sweep attacks: reach returns the message holding it, creating the
// messages on the way.
type gsite struct {
	name  string
	fd    protoreflect.FieldDescriptor
	reach func(root protoreflect.Message) protoreflect.Message
}

func grpcSites(md protoreflect.MessageDescriptor) []gsite {
	var out []gsite
	stack := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor, reach func(protoreflect.Message) protoreflect.Message, prefix string, depth int)
	walk = func(md protoreflect.MessageDescriptor, reach func(protoreflect.Message) protoreflect.Message, prefix string, depth int) {
		if depth > maxDepth || stack[md.FullName()] || len(out) >= 2*maxSites {
			return
		}
		stack[md.FullName()] = true
		defer delete(stack, md.FullName())
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			name := prefix + string(fd.Name())
			out = append(out, gsite{name: name, fd: fd, reach: reach})
			if fd.Kind() != protoreflect.MessageKind || fd.IsMap() && fd.MapValue().Kind() != protoreflect.MessageKind {
				continue
			}
			var child func(protoreflect.Message) protoreflect.Message
			var cmd protoreflect.MessageDescriptor
			switch {
			case fd.IsMap():
				cmd = fd.MapValue().Message()
				child = func(root protoreflect.Message) protoreflect.Message {
					return reach(root).Mutable(fd).Map().Mutable(protoreflect.ValueOfString(placeholder).MapKey()).Message()
				}
			case fd.IsList():
				cmd = fd.Message()
				child = func(root protoreflect.Message) protoreflect.Message {
					l := reach(root).Mutable(fd).List()
					if l.Len() == 0 {
						return l.AppendMutable().Message()
					}
					return l.Get(0).Message()
				}
			default:
				cmd = fd.Message()
				child = func(root protoreflect.Message) protoreflect.Message { return reach(root).Mutable(fd).Message() }
			}
			walk(cmd, child, name+".", depth+1)
		}
	}
	walk(md, func(r protoreflect.Message) protoreflect.Message { return r }, "", 0)
	return out
}

// grpcCases builds every hostile call of a method; oversize adds a message above grpc-go's
// receive limit (once per service is enough: the transport refuses it before decoding).
func grpcCases(m *grpcMethod, oversize bool) []grpcCase {
	base := func() protoreflect.Message {
		msg := dynamicpb.NewMessage(m.in)
		fillValid(msg, 0)
		if strings.HasPrefix(m.full[strings.LastIndexByte(m.full, '/')+1:], "Delete") {
			retarget(msg)
		}
		return msg
	}
	encode := func(msg protoreflect.Message) []byte {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg.Interface())
		if err != nil {
			panic(fmt.Sprintf("%s: %v", m.full, err))
		}
		return b
	}
	baseWire := encode(base())
	out := []grpcCase{{m: m, kind: "baseline", wire: baseWire}, {m: m, kind: "empty", wire: nil}}
	add := func(kind, field string, mustFail bool, wire []byte, words ...string) {
		out = append(out, grpcCase{m: m, kind: kind, field: field, mustFail: mustFail, wire: wire, words: words})
	}
	malformed := []string{"wire", "protobuf", "message", "decode", "parse", "malformed", "request"}
	add("wire.truncated", "", true, append(append([]byte(nil), baseWire...), 0x0a, 0xff), malformed...)
	add("wire.bad-varint", "", true, append(append([]byte(nil), baseWire...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), malformed...)
	add("wire.field-zero", "", true, append(append([]byte(nil), baseWire...), 0x00, 0x01), malformed...)
	add("wire.unknown-field", "", false, protowire.AppendVarint(protowire.AppendTag(append([]byte(nil), baseWire...), 100000, protowire.VarintType), 1))
	add("wire.end-group", "", true, append(append([]byte(nil), baseWire...), 0x0c), malformed...)

	oversized := !oversize
	for _, st := range grpcSites(m.in) {
		fd := st.fd
		set := func(v func(holder protoreflect.Message)) []byte {
			msg := base()
			v(st.reach(msg))
			return encode(msg)
		}
		setValue := func(val protoreflect.Value) []byte {
			return set(func(h protoreflect.Message) {
				switch {
				case fd.IsList():
					l := h.NewField(fd).List()
					l.Append(val)
					h.Set(fd, protoreflect.ValueOfList(l))
				case fd.IsMap():
					mp := h.NewField(fd).Map()
					mp.Set(protoreflect.ValueOfString(placeholder).MapKey(), val)
					h.Set(fd, protoreflect.ValueOfMap(mp))
				default:
					h.Set(fd, val)
				}
			})
		}
		if fd.IsList() {
			add("list.big-50000", st.name, false, set(func(h protoreflect.Message) {
				l := h.Mutable(fd).List()
				if l.Len() == 0 {
					if fd.Message() != nil {
						fillValid(l.AppendMutable().Message(), maxDepth)
					} else {
						l.Append(scalar(fd))
					}
				}
				el := l.Get(0)
				for l.Len() < bigArray {
					l.Append(el)
				}
			}), wordsLarge...)
		}
		if fd.IsList() && fd.Kind() == protoreflect.StringKind { // items every item rule refuses
			add("list.big-50000-invalid", st.name, false, set(func(h protoreflect.Message) {
				l := h.NewField(fd).List()
				for range bigArray {
					l.Append(protoreflect.ValueOfString("!"))
				}
				h.Set(fd, protoreflect.ValueOfList(l))
			}), wordsLarge...)
		}
		kind := fd.Kind()
		if fd.IsMap() {
			kind = fd.MapValue().Kind()
			if fd.MapKey().Kind() == protoreflect.StringKind {
				val := protoreflect.ValueOfString(placeholder)
				if kind == protoreflect.MessageKind {
					val = protoreflect.ValueOfMessage(dynamicpb.NewMessage(fd.MapValue().Message()))
				} else if kind != protoreflect.StringKind {
					val = scalar(fd.MapValue())
				}
				setKey := func(key string) []byte {
					return set(func(h protoreflect.Message) {
						mp := h.NewField(fd).Map()
						mp.Set(protoreflect.ValueOfString(key).MapKey(), val)
						h.Set(fd, protoreflect.ValueOfMap(mp))
					})
				}
				add("map-key.nul", st.name, true, setKey("a\x00b"), wordsNUL...)
				add("map-key.invalid-utf8", st.name, true, bytes.ReplaceAll(setKey(utf8Marker), []byte(utf8Marker), []byte(utf8Broken)), wordsUTF8...)
			}
		}
		switch kind {
		case protoreflect.StringKind:
			add("string.nul", st.name, true, setValue(protoreflect.ValueOfString("a\x00b")), wordsNUL...)
			add("string.invalid-utf8", st.name, true,
				bytes.ReplaceAll(setValue(protoreflect.ValueOfString(utf8Marker)), []byte(utf8Marker), []byte(utf8Broken)), wordsUTF8...)
			add("string.huge-900KiB", st.name, false, setValue(protoreflect.ValueOfString(strings.Repeat("x", hugeString))), wordsLarge...)
			if !oversized {
				oversized = true
				add("string.over-4MiB-message", st.name, true, setValue(protoreflect.ValueOfString(strings.Repeat("x", grpcOversize))),
					append(wordsLarge, "resource", "message")...)
			}
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			add("int32.min", st.name, false, setValue(protoreflect.ValueOfInt32(math.MinInt32)))
			add("int32.max", st.name, false, setValue(protoreflect.ValueOfInt32(math.MaxInt32)))
			add("int32.negative", st.name, false, setValue(protoreflect.ValueOfInt32(-1)))
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			add("int64.min", st.name, false, setValue(protoreflect.ValueOfInt64(math.MinInt64)))
			add("int64.max", st.name, false, setValue(protoreflect.ValueOfInt64(math.MaxInt64)))
			add("int64.negative", st.name, false, setValue(protoreflect.ValueOfInt64(-1)))
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			add("uint32.max", st.name, false, setValue(protoreflect.ValueOfUint32(math.MaxUint32)))
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			add("uint64.max", st.name, false, setValue(protoreflect.ValueOfUint64(math.MaxUint64)))
		case protoreflect.DoubleKind:
			add("double.nan", st.name, false, setValue(protoreflect.ValueOfFloat64(math.NaN())))
			add("double.+inf", st.name, false, setValue(protoreflect.ValueOfFloat64(math.Inf(1))))
			add("double.-max", st.name, false, setValue(protoreflect.ValueOfFloat64(-math.MaxFloat64)))
		case protoreflect.FloatKind:
			add("float.nan", st.name, false, setValue(protoreflect.ValueOfFloat32(float32(math.NaN()))))
			add("float.-inf", st.name, false, setValue(protoreflect.ValueOfFloat32(float32(math.Inf(-1)))))
		case protoreflect.EnumKind:
			add("enum.unknown", st.name, false, setValue(protoreflect.ValueOfEnum(12345)))
			add("enum.negative", st.name, false, setValue(protoreflect.ValueOfEnum(-1)))
		}
	}
	// Deep recursion, where messages nest.
	if prefix, cycle := findCycle(m.in); cycle != nil {
		for _, depth := range []int{100, deepNesting + 1} { // protobuf's limit is 10,000
			n := depth/len(cycle) + 1
			path := append([]protowire.Number(nil), prefix...)
			for range n {
				path = append(path, cycle...)
			}
			add(fmt.Sprintf("deep-%d", depth), "", depth > 10000, nestedWire(path), wordsDeep...)
		}
	}
	return out
}

// findCycle returns the field numbers from a message to a message type that contains itself
// (through fields, list elements or map values) and the numbers of one turn of the cycle.
func findCycle(md protoreflect.MessageDescriptor) (prefix, cycle []protowire.Number) {
	var path []protowire.Number
	var types []protoreflect.FullName
	var walk func(md protoreflect.MessageDescriptor) bool
	walk = func(md protoreflect.MessageDescriptor) bool {
		for i, t := range types {
			if t == md.FullName() {
				prefix = append([]protowire.Number(nil), path[:i]...)
				cycle = append([]protowire.Number(nil), path[i:]...)
				return true
			}
		}
		if len(types) > 8 {
			return false
		}
		types = append(types, md.FullName())
		defer func() { types = types[:len(types)-1] }()
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			if fd.Kind() != protoreflect.MessageKind {
				continue
			}
			path = append(path, fd.Number())
			found := walk(fd.Message()) // a map field's message is its entry
			path = path[:len(path)-1]
			if found {
				return true
			}
		}
		return false
	}
	walk(md)
	return prefix, cycle
}

// nestedWire encodes messages nested along path (each step a length-delimited field), the
// innermost empty, without copying the inner bytes at every level.
func nestedWire(path []protowire.Number) []byte {
	inner := make([]int, len(path)) // inner[i]: bytes inside step i
	for i := len(path) - 2; i >= 0; i-- {
		inner[i] = protowire.SizeTag(path[i+1]) + protowire.SizeBytes(inner[i+1])
	}
	var b []byte
	for i, num := range path {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(inner[i]))
	}
	return b
}

// grpcAnswer is a call's outcome.
type grpcAnswer struct {
	st   *status.Status
	took time.Duration
}

func callGRPC(conn *grpc.ClientConn, c *grpcCase, token string) grpcAnswer {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), grpcTimeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	codec := grpc.ForceCodecV2(rawCodec{})
	var err error
	if c.m.streaming {
		var s grpc.ClientStream
		s, err = conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, c.m.full, codec)
		if err == nil {
			if err = s.SendMsg(&rawFrame{b: c.wire}); err == nil || errors.Is(err, io.EOF) {
				_ = s.CloseSend()
				err = s.RecvMsg(&rawFrame{}) // the first message or the status
			}
		}
	} else {
		err = conn.Invoke(ctx, c.m.full, &rawFrame{b: c.wire}, &rawFrame{}, codec)
	}
	st, _ := status.FromError(err)
	if err != nil && st.Code() == codes.DeadlineExceeded && ctx.Err() != nil {
		st = status.New(codes.DeadlineExceeded, "sweep: no answer within "+grpcTimeout.String())
	}
	return grpcAnswer{st: st, took: time.Since(start)}
}

// sweepGRPC calls every method of the contract with hostile messages over st.Conn.
func sweepGRPC(t *testing.T, st *stack.Stack) {
	t.Helper()
	s := &session{base: st.BaseURL, client: &http.Client{Timeout: 30 * time.Second}}
	tok, err := s.login()
	if err != nil {
		t.Fatal(err)
	}
	s.token = tok
	methods := contractMethods()
	var cases []grpcCase
	services := map[string]bool{}
	for _, m := range methods {
		svc := m.full[:strings.LastIndexByte(m.full, '/')]
		for _, c := range grpcCases(m, !services[svc]) {
			services[svc] = services[svc] || c.kind == "string.over-4MiB-message"
			cases = append(cases, c)
		}
	}
	t.Logf("%d methods, %d gRPC cases", len(methods), len(cases))
	var f, notes findings
	var byKind tally
	var n, retried atomic.Int64
	var mu sync.Mutex
	codeCount := map[codes.Code]int{}
	baseMsg := map[string]string{} // method -> its baseline's error message
	run := func(c *grpcCase, fresh bool) {
		token, gen := s.get()
		if fresh { // Logout revokes the caller's token: give it one of its own
			var err error
			if token, err = s.login(); err != nil {
				t.Errorf("login: %v", err)
				return
			}
		}
		a := callGRPC(st.Conn, c, token)
		if a.st.Code() == codes.Unauthenticated && !fresh {
			if err := s.renew(gen); err == nil {
				token, _ = s.get()
				a = callGRPC(st.Conn, c, token)
				retried.Add(1)
			}
		}
		n.Add(1)
		mu.Lock()
		codeCount[a.st.Code()]++
		prior := baseMsg[c.m.full]
		if c.kind == "baseline" && a.st.Code() != codes.OK {
			baseMsg[c.m.full] = a.st.Message()
		}
		mu.Unlock()
		checkGRPC(&f, &notes, c, a, prior)
		byKind.add(c.kind, a.st.Code().String(), a.took)
	}
	start := time.Now()
	runCases(cases, workers, func(c *grpcCase) bool { return c.kind == "baseline" },
		func(c *grpcCase) bool { return c.m.revokes }, run)
	var hist []string
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if codeCount[c] > 0 {
			hist = append(hist, fmt.Sprintf("%s:%d", c, codeCount[c]))
		}
	}
	t.Logf("%d calls in %v; codes %s; re-sent after Unauthenticated: %d", n.Load(), time.Since(start).Round(time.Millisecond),
		strings.Join(hist, " "), retried.Load())
	byKind.log(t)
	notes.log(t, "notes (not failures): large inputs accepted")
	f.report(t)
}

// checkGRPC records the problems of one answer; baseMsg is the method's baseline error (an
// InvalidArgument repeating it was about another field).
func checkGRPC(f, notes *findings, c *grpcCase, a grpcAnswer, baseMsg string) {
	code, msg := a.st.Code(), a.st.Message()
	req := fmt.Sprintf("%s %d bytes: %s", c.m.full, len(c.wire), clip(string(c.wire), 120))
	ans := fmt.Sprintf("%s: %s (after %v)", code, clip(msg, 300), a.took.Round(time.Millisecond))
	fail := func(problem string) {
		f.add(problem, c.kind, c.m.full, example{field: c.field, request: req, answer: ans})
	}
	switch code {
	case codes.OK:
		if c.mustFail {
			fail("hostile input accepted (OK)")
		}
		if strings.Contains(c.kind, "huge") || strings.Contains(c.kind, "big") {
			notes.add("accepted", c.kind, c.m.full, example{field: c.field})
		}
		return
	case codes.Internal, codes.Unknown, codes.DataLoss:
		fail("gRPC " + code.String())
	case codes.DeadlineExceeded:
		fail("no answer within the timeout")
	}
	if strings.TrimSpace(msg) == "" {
		fail("empty status message")
	}
	if l := leaked(msg); l != "" {
		fail("internals leaked in the message (" + l + ")")
	}
	if len(msg) > maxMessage {
		fail("status message longer than 4 KiB (echoes the input)")
	}
	field := c.field
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	if code == codes.InvalidArgument && c.mustFail && msg != baseMsg && !names(msg, field, c.words) {
		fail("InvalidArgument does not name the field or the problem")
	}
}

// runCases runs cases on workers goroutines, the baselines first (their errors are known),
// then the cases that revoke the caller's token last, one by one, each with its own token:
// run's second argument says which.
func runCases[C any](cases []C, workers int, baseline, revokes func(*C) bool, run func(*C, bool)) {
	var revoking []*C
	for _, baselines := range []bool{true, false} {
		work := make(chan *C)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range work {
					run(c, false)
				}
			}()
		}
		for i := range cases {
			switch {
			case baseline(&cases[i]) != baselines:
			case revokes(&cases[i]):
				revoking = append(revoking, &cases[i])
			default:
				work <- &cases[i]
			}
		}
		close(work)
		wg.Wait()
	}
	for _, c := range revoking {
		run(c, true)
	}
}
