//go:build platform

package chat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// subscribers is how many WebSocket subscribers BenchmarkRealtimeFanout holds.
const subscribers = 1000

// pace separates the benchmark's events: one event's fan-out (about 40 ms of CPU for 1,000
// subscribers here) is measured on its own, not queued behind the previous one's.
const pace = 250 * time.Millisecond

// tickAgent emits one render event per value received on ticks, its props carrying the
// tick's number; the send time of each is in sent.
type tickAgent struct {
	ticks chan int
	mu    sync.Mutex
	sent  map[int]time.Time
}

func (a *tickAgent) Answer(ctx context.Context, _ *agent.Request, emit agent.Emit) error {
	for {
		select {
		case n, ok := <-a.ticks:
			if !ok {
				return nil
			}
			a.mu.Lock()
			a.sent[n] = time.Now()
			a.mu.Unlock()
			if err := emit(render("tick", "Tick", map[string]any{"n": n})); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// rawWS is a minimal WebSocket client on a raw connection (the handshake, masked text
// frames out, unmasked frames in), so that the benchmark's own client costs little memory.
type rawWS struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(addr, token string) (*rawWS, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET /api/v1/realtime HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: shopmind.realtime.v1\r\nAuthorization: Bearer %s\r\n\r\n", addr, token)
	r := bufio.NewReaderSize(c, 512)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("upgrade: %v %v", resp, err)
	}
	return &rawWS{c: c, r: r}, nil
}

// send writes one masked text frame (mask key zero: the payload goes as it is).
func (w *rawWS) send(payload []byte) error {
	hdr := []byte{0x81, 0}
	switch n := len(payload); {
	case n < 126:
		hdr[1] = 0x80 | byte(n)
	default:
		hdr[1] = 0x80 | 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	}
	hdr = append(hdr, 0, 0, 0, 0)
	_, err := w.c.Write(append(hdr, payload...))
	return err
}

// next reads one frame's payload (text frames; control frames are skipped).
func (w *rawWS) next() ([]byte, error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.r, h[:]); err != nil {
			return nil, err
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(w.r, p); err != nil {
			return nil, err
		}
		if h[0]&0x0f == 1 {
			return p, nil
		}
	}
}

// BenchmarkRealtimeFanout holds 1,000 WebSocket subscribers of one workflow on one process
// (the gateway, the chat service and the clients), reports the memory each idle
// subscriber costs the process (heap and goroutine stacks, runtime.MemStats deltas / 1000),
// then emits 20 events 250 ms apart and reports the time from the agent's emit to each
// subscriber reading the event (p50, p99, max over the 20,000 deliveries) and the process
// CPU time per delivery during the fan-out (clients included: a figure that does not
// depend on how loaded the machine is). Every event reaches every subscriber, or the
// benchmark fails.
func BenchmarkRealtimeFanout(b *testing.B) {
	const ticks = 20
	a := &tickAgent{}
	s := start(b, a, func(c *app.Config) { c.Edge.RealtimeHeartbeat = time.Hour })
	token := s.Admin(b).Access
	addr := strings.TrimPrefix(s.BaseURL, "http://")
	var heapPer, stackPer, goroutinesPer, cpuPer float64
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		a.mu.Lock()
		a.ticks, a.sent = make(chan int), map[int]time.Time{}
		a.mu.Unlock()
		id := startWorkflow(b, s, token, `{"task_description":"fan out"}`)
		waitWorkflow(b, s, token, id, "running")
		sub, _ := json.Marshal(map[string]any{"type": "subscribe", "topic": "workflow:" + id, "offset": 2})

		heap0, stack0 := heapAndStack()
		g0 := runtime.NumGoroutine()
		conns := make([]*rawWS, subscribers)
		var wg sync.WaitGroup
		errs := make(chan error, subscribers)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < subscribers; j += 16 {
					c, err := dialRaw(addr, token)
					if err == nil {
						err = c.send(sub)
					}
					var f []byte
					if err == nil {
						f, err = c.next()
					}
					if err == nil && !strings.Contains(string(f), `"subscribed"`) {
						err = fmt.Errorf("frame %s", f)
					}
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
		time.Sleep(200 * time.Millisecond) // every subscription parked on the feed
		heap1, stack1 := heapAndStack()
		heapPer = float64(int64(heap1)-int64(heap0)) / subscribers
		stackPer = float64(int64(stack1)-int64(stack0)) / subscribers
		goroutinesPer = float64(runtime.NumGoroutine()-g0) / subscribers

		// Fan-out: every subscriber reads every tick.
		got := make(chan time.Duration, subscribers*ticks)
		var readers sync.WaitGroup
		for _, c := range conns {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for seen := 0; seen < ticks; {
					p, err := c.next()
					if err != nil {
						return
					}
					now := time.Now()
					// The tick's number, without decoding the whole frame (the clients share
					// the process's two cores with the platform).
					_, rest, ok := bytes.Cut(p, []byte(`"Tick","props":{"n":`))
					if !ok {
						continue
					}
					digits, _, _ := bytes.Cut(rest, []byte("}"))
					n, _ := strconv.Atoi(string(digits))
					a.mu.Lock()
					sent := a.sent[n]
					a.mu.Unlock()
					got <- now.Sub(sent)
					seen++
				}
			}()
		}
		cpu0 := cpuTime()
		for n := 1; n <= ticks; n++ {
			a.ticks <- n
			time.Sleep(pace)
		}
		readers.Wait()
		cpuPer = float64((cpuTime() - cpu0).Microseconds()) / (subscribers * ticks)
		close(got)
		for d := range got {
			lat = append(lat, d)
		}
		if len(lat) != (i+1)*subscribers*ticks {
			b.Fatalf("%d deliveries, want %d", len(lat), (i+1)*subscribers*ticks)
		}
		close(a.ticks)
		for _, c := range conns {
			_ = c.c.Close()
		}
		waitWorkflow(b, s, token, id, "completed")
	}
	b.ReportMetric(heapPer/1024, "heap-KiB/sub")
	b.ReportMetric(stackPer/1024, "stack-KiB/sub")
	b.ReportMetric(goroutinesPer, "goroutines/sub")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(percentile(lat, 1).Microseconds())/1000, "max-ms")
	b.ReportMetric(cpuPer, "cpu-µs/delivery")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
