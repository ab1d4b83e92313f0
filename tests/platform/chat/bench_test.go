//go:build platform

package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// idleStreams is how many streams BenchmarkIdleStreams holds open at once.
const idleStreams = 1000

// waitingAgent answers nothing until released: its streams sit idle.
type waitingAgent struct {
	mu      sync.Mutex
	release chan struct{}
}

func (w *waitingAgent) gate() chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.release
}

func (w *waitingAgent) Answer(ctx context.Context, _ *agent.Request, emit agent.Emit) error {
	select {
	case <-w.gate():
	case <-ctx.Done():
		return ctx.Err()
	}
	return emit(chunk("released"))
}

func heapAndStack() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}

// openRaw starts one SSE request on a raw connection and reads up to the end of the
// response headers: the stream is then open and idle (the agent waits). A raw connection
// keeps the client's own memory out of the measurement as far as possible.
func openRaw(addr, token string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	body := `{"message":"wait for it"}`
	fmt.Fprintf(c, "POST /api/v2/chat/message HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		addr, token, len(body), body)
	r := bufio.NewReaderSize(c, 1024)
	status, err := r.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		c.Close()
		return nil, fmt.Errorf("status %q: %v", status, err)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if line == "\r\n" {
			return c, nil
		}
	}
}

// BenchmarkIdleStreams holds 1,000 streams open at once through the gateway (the agent
// waits) and reports the memory each idle stream costs the process: heap and goroutine
// stacks (gateway connection and bridge, gRPC client and server streams, the chat
// service's forwarder, pipeline and the waiting agent), as runtime.MemStats deltas / 1000.
func BenchmarkIdleStreams(b *testing.B) {
	a := &waitingAgent{}
	s := start(b, a)
	token := s.Admin(b).Access
	addr := strings.TrimPrefix(s.BaseURL, "http://")
	var heapPer, stackPer, goroutinesPer float64
	for i := 0; i < b.N; i++ {
		a.mu.Lock()
		a.release = make(chan struct{})
		a.mu.Unlock()
		heap0, stack0 := heapAndStack()
		g0 := runtime.NumGoroutine()
		conns := make([]net.Conn, idleStreams)
		var wg sync.WaitGroup
		errs := make(chan error, idleStreams)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < idleStreams; j += 16 {
					c, err := openRaw(addr, token)
					if err != nil {
						errs <- err
						return
					}
					conns[j] = c
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // every pipeline parked in the agent
		heap1, stack1 := heapAndStack()
		g1 := runtime.NumGoroutine()
		heapPer = float64(int64(heap1)-int64(heap0)) / idleStreams
		stackPer = float64(int64(stack1)-int64(stack0)) / idleStreams
		goroutinesPer = float64(g1-g0) / idleStreams

		// Release the agents, hang up, and wait until every reply is stored.
		close(a.gate())
		for _, c := range conns {
			_ = c.Close()
		}
		want := (i + 1) * idleStreams
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var n int
			if err := s.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM chat.messages WHERE role = 'assistant'`).Scan(&n); err != nil {
				b.Fatal(err)
			}
			if n >= want {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d replies stored", n, want)
			}
		}
	}
	b.ReportMetric(heapPer/1024, "heap-KiB/stream")
	b.ReportMetric(stackPer/1024, "stack-KiB/stream")
	b.ReportMetric((heapPer+stackPer)/1024, "KiB/stream")
	b.ReportMetric(goroutinesPer, "goroutines/stream")
}

// pacedAgent emits n chunks, one every interval, each carrying its emit time (Unix
// nanoseconds) as its text.
type pacedAgent struct {
	n        int
	interval time.Duration
}

func (p pacedAgent) Answer(_ context.Context, _ *agent.Request, emit agent.Emit) error {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for i := 0; i < p.n; i++ {
		<-t.C
		if err := emit(chunk(strconv.FormatInt(time.Now().UnixNano(), 10))); err != nil {
			return err
		}
	}
	return nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[int(float64(len(d)-1)*p)]
}

// BenchmarkEventLatency measures, per event, the time from the agent's emit to the client
// reading it: over gRPC straight from the chat service, and through the gateway's SSE
// bridge. The difference is what the bridge adds (the REST edge chain, the second gRPC
// hop's decode, the SSE encoding and the flush).
func BenchmarkEventLatency(b *testing.B) {
	const events = 2000
	s := start(b, pacedAgent{n: events, interval: 500 * time.Microsecond})
	token := s.Admin(b).Access
	var direct, bridged []time.Duration
	for i := 0; i < b.N; i++ {
		// gRPC straight to the chat service.
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
		st, err := chatv2.NewChatServiceClient(s.Conn).SendMessage(ctx, &chatv2.SendMessageRequest{Message: "latency"})
		if err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := st.Recv()
			if err != nil {
				break
			}
			now := time.Now()
			if c := ev.GetChunk(); c != nil {
				if ns, err := strconv.ParseInt(c.GetChoices()[0].GetDelta().GetContent(), 10, 64); err == nil {
					direct = append(direct, now.Sub(time.Unix(0, ns)))
				}
			}
		}
		// The same through the gateway.
		req, _ := http.NewRequest("POST", s.BaseURL+"/api/v2/chat/message", strings.NewReader(`{"message":"latency"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			now := time.Now()
			data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(data), &c) == nil && len(c.Choices) == 1 {
				if ns, err := strconv.ParseInt(c.Choices[0].Delta.Content, 10, 64); err == nil {
					bridged = append(bridged, now.Sub(time.Unix(0, ns)))
				}
			}
		}
		resp.Body.Close()
	}
	if len(direct) < events || len(bridged) < events {
		b.Fatalf("events: %d direct, %d bridged", len(direct), len(bridged))
	}
	d50, d99 := percentile(direct, 0.5), percentile(direct, 0.99)
	s50, s99 := percentile(bridged, 0.5), percentile(bridged, 0.99)
	b.ReportMetric(float64(d50.Microseconds()), "grpc-p50-µs")
	b.ReportMetric(float64(d99.Microseconds()), "grpc-p99-µs")
	b.ReportMetric(float64(s50.Microseconds()), "sse-p50-µs")
	b.ReportMetric(float64(s99.Microseconds()), "sse-p99-µs")
	b.ReportMetric(float64((s99 - d99).Microseconds()), "bridge-added-p99-µs")
	b.ReportMetric(float64((s50 - d50).Microseconds()), "bridge-added-p50-µs")
}
