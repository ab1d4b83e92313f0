package stack

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	genopenapi "github.com/shopmind/shopmind/gen/openapi"
	"github.com/shopmind/shopmind/internal/openapi"
)

// Every answer a platform test reads through Stack.HTTP (Do, Login and the tests' own
// requests on that client) is checked against the OpenAPI document the gateway serves
// (gen/openapi): a JSON answer when its body has been read to the end, an event stream
// event by event. An answer the document does not describe fails the test, naming the
// operation, the mismatch and the body. Requests that are no operation of the document
// (health, metrics, unknown routes) are not checked; nor are answers of a platform set to
// always answer HTTP 200 (SHOPMIND_ALWAYS_HTTP_200), which the document does not describe.

var (
	validatorOnce sync.Once
	validator     *openapi.Validator
	validatorErr  error
)

func documentValidator() (*openapi.Validator, error) {
	validatorOnce.Do(func() { validator, validatorErr = openapi.NewValidator(genopenapi.V31) })
	return validator, validatorErr
}

// checkingTransport validates the answers of base.
type checkingTransport struct {
	t     testing.TB
	base  http.RoundTripper
	v     *openapi.Validator
	ended *atomic.Bool // the test is over: report nothing more
}

func (c *checkingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &checkedBody{ReadCloser: resp.Body, check: func(body []byte, complete bool) {
		if _, err := c.v.Check(r, resp.StatusCode, resp.Header, body, complete); err != nil && !c.ended.Load() {
			c.t.Errorf("OpenAPI: %s %s: %v", r.Method, r.URL.Path, err)
		}
	}}
	return resp, nil
}

// checkedBody keeps what the client reads and checks it at the end of the body, or at
// Close for what was read.
type checkedBody struct {
	io.ReadCloser
	buf   bytes.Buffer
	once  sync.Once
	check func(body []byte, complete bool)
}

func (b *checkedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	if err == io.EOF {
		b.once.Do(func() { b.check(b.buf.Bytes(), true) })
	}
	return n, err
}

func (b *checkedBody) Close() error {
	b.once.Do(func() { b.check(b.buf.Bytes(), false) })
	return b.ReadCloser.Close()
}

// checkAnswers puts the document check on the stack's client.
func checkAnswers(t testing.TB, client *http.Client) {
	t.Helper()
	v, err := documentValidator()
	if err != nil {
		t.Fatalf("stack: %v", err)
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	ended := &atomic.Bool{}
	client.Transport = &checkingTransport{t: t, base: base, v: v, ended: ended}
	t.Cleanup(func() { ended.Store(true) })
}
