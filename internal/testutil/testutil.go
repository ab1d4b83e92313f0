// Package testutil holds the small helpers the tests of several packages share; the
// running platform (stack) and the test databases (pgtest) have packages of their own.
package testutil

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Envelope is the gateway's JSON answer: {"code", "message", "data"}.
type Envelope struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// DecodeEnvelope decodes an HTTP answer's body as an Envelope; a body that is not one
// fails the test, naming the request (what, e.g. "GET /x"), the status and the body.
func DecodeEnvelope(t testing.TB, what string, status int, body []byte) Envelope {
	t.Helper()
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("%s: not an envelope (HTTP %d): %q", what, status, body)
	}
	return env
}

// ServeGRPC serves a gRPC server (serve: its Serve) on a loopback port and returns a
// plaintext connection to it; when the test ends the connection is closed, then stop (the
// server's Stop) runs.
func ServeGRPC(t testing.TB, serve func(net.Listener) error, stop func()) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); stop() })
	return conn
}

// DrainOK sends req (a benchmark's request, from any goroutine), reads its body to the
// end and reports whether it answered 200; a failure is reported with tb.Error.
func DrainOK(tb testing.TB, client *http.Client, req *http.Request) bool {
	resp, err := client.Do(req)
	if err != nil {
		tb.Error(err)
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		tb.Errorf("%s %s: status %d", req.Method, req.URL.Path, resp.StatusCode)
		return false
	}
	return true
}

// Burst runs send(0) to send(n-1) at once, each on its own goroutine, released together
// once all have started, and returns their results in order.
func Burst[T any](n int, send func(i int) T) []T {
	out := make([]T, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = send(i)
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// SSEData reads a server-sent event stream and returns the data of its events in order, up
// to `data: [DONE]`, and whether [DONE] came (the chat streams' end). Lines of other fields
// and comments are skipped; an event's data may be up to 16 MiB.
func SSEData(r io.Reader) (data []string, done bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if d == "[DONE]" {
			return data, true, nil
		}
		data = append(data, d)
	}
	return data, false, sc.Err()
}

// Eventually polls cond every 20ms until it holds, failing the test naming what when
// timeout passes first (a bound on waiting, not a timing assertion).
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}
