//go:build platform

package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/tier"
)

// cutProxy stands between a client and the gateway: it refuses the first refuse
// connections (closes them at once) and cuts every live connection on cut(), like a
// network that comes and goes.
type cutProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	refuse int
	live   []net.Conn
}

func newCutProxy(t *testing.T, target string, refuse int) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, refuse: refuse}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.refuse > 0 {
			p.refuse--
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.live = append(p.live, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.live {
		_ = c.Close()
	}
	p.live = nil
}

// The WebSocket channel with a client library nobody here wrote: the npm package ws
// (tests/realtime/ws-client, installed by scripts/test-deps.sh). The network refuses the
// client twice, then cuts it in the middle of a workflow: the client backs off
// exponentially, reconnects, resumes from its last offset, and ends up with every event of
// the workflow exactly once.
func TestRealtimeWithNodeWS(t *testing.T) {
	tier.Needs(t, "Node.js with the npm package ws, and PostgreSQL")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: run scripts/test-deps.sh: %v", err)
	}
	dir, _ := filepath.Abs("../../realtime/ws-client")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ws")); err != nil {
		t.Fatalf("the ws package is not installed in %s: run scripts/test-deps.sh", dir)
	}
	a := &planAgent{gate: make(chan struct{})}
	s := start(t, a)
	token := s.Admin(t).Access
	id := startWorkflow(t, s, token, `{"task_description":"analyse last month's sales and goods"}`)
	proxy := newCutProxy(t, strings.TrimPrefix(s.BaseURL, "http://"), 2)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.js", "ws://"+proxy.ln.Addr().String()+"/api/v1/realtime", token, "workflow:"+id, "0")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BACKOFF_BASE_MS=50", "BACKOFF_MAX_MS=2000", "MAX_ATTEMPTS=8")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type line struct {
		Connecting int             `json:"connecting"`
		Subscribed *int64          `json:"subscribed"`
		Offset     int64           `json:"offset"`
		Data       json.RawMessage `json:"data"`
		Duplicate  int64           `json:"duplicate"`
		Reconnect  int             `json:"reconnect"`
		DelayMs    float64         `json:"delay_ms"`
		BaseMs     float64         `json:"base_ms"`
		End        bool            `json:"end"`
	}
	var lines []line
	var raw []string
	cutDone := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		raw = append(raw, sc.Text())
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("client line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
		// Once the first text arrived, the network goes down and the agents go on.
		if !cutDone && l.Offset > 0 && strings.Contains(string(l.Data), `"type":"text"`) {
			cutDone = true
			proxy.cut()
			close(a.gate)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client: %v\n%s", err, strings.Join(raw, "\n"))
	}

	var events []json.RawMessage
	var delays []line
	connects := 0
	for _, l := range lines {
		switch {
		case l.Duplicate != 0:
			t.Fatalf("duplicate event %d:\n%s", l.Duplicate, strings.Join(raw, "\n"))
		case l.Offset != 0:
			if l.Offset != int64(len(events)+1) {
				t.Fatalf("event %d after %d events:\n%s", l.Offset, len(events), strings.Join(raw, "\n"))
			}
			events = append(events, l.Data)
		case l.Reconnect != 0:
			delays = append(delays, l)
		case l.Connecting != 0:
			connects++
		}
	}
	if !lines[len(lines)-1].End || !cutDone {
		t.Fatalf("the client did not see the end (cut %v):\n%s", cutDone, strings.Join(raw, "\n"))
	}
	// Refused twice (attempts 1 and 2 back off 50 then 100 ms), then connected; cut, then
	// attempt 1 again (the subscription had reset the count).
	if connects < 4 || len(delays) < 3 {
		t.Fatalf("%d connections, %d reconnects:\n%s", connects, len(delays), strings.Join(raw, "\n"))
	}
	for _, d := range delays {
		want := min(2000, 50*float64(int(1)<<(d.Reconnect-1)))
		if d.BaseMs != want || d.DelayMs < want/2 || d.DelayMs > want {
			t.Fatalf("backoff of attempt %d: %v ms (base %v), want within [%v, %v]", d.Reconnect, d.DelayMs, d.BaseMs, want/2, want)
		}
	}
	if delays[0].Reconnect != 1 || delays[1].Reconnect != 2 {
		t.Fatalf("backoff attempts: %+v", delays)
	}

	// Exactly the workflow's events, as SSE replays them.
	es, env := openEvents(t, s, "/api/v1/chat/workflows/"+id+"/events", token, "")
	if env != nil {
		t.Fatalf("replay: %+v", env)
	}
	replay, _ := readAll(t, es)
	if len(replay) != len(events) {
		t.Fatalf("client saw %d events, the workflow has %d", len(events), len(replay))
	}
	for i, raw := range events {
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ev, replay[i]) {
			t.Fatalf("event %d: %v, want %v", i+1, ev, replay[i])
		}
	}
	if replay[len(replay)-1]["status"] != "completed" {
		t.Fatalf("last event %v", replay[len(replay)-1])
	}
}
