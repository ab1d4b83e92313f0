package partners

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Defaults and bounds of the clients (see PROTOCOL.md).
const (
	// DefaultTimeout bounds one HTTP attempt (request, headers and the whole body).
	DefaultTimeout = 10 * time.Second
	// DefaultMaxRetries is how often a failed attempt is tried again (4 attempts in all).
	DefaultMaxRetries = 3
	// DefaultBackoff is the first wait between attempts; it doubles on each retry.
	DefaultBackoff = 200 * time.Millisecond
	// MaxBackoff caps one computed backoff wait.
	MaxBackoff = 5 * time.Second
	// MaxRetryAfter is the longest Retry-After honoured; a partner asking for a longer
	// pause gets no retry (the error carries its Retry-After).
	MaxRetryAfter = 30 * time.Second
	// MaxBodyBytes bounds a response body (after decompression).
	MaxBodyBytes = 8 << 20
	// DefaultMaxItems is the bound of AllGoods and AllSKUs when the caller passes 0.
	DefaultMaxItems = 100_000

	maxErrorBody  = 64 << 10 // read of a non-2xx body, for its message
	maxDetail     = 300      // runes of partner text quoted in an error
	userAgent     = "shopmind-basic-sync/1"
	keyRedacted   = "[redacted]"
	maxKeyLength  = 4096
	maxTokenBytes = 2048 // page tokens, both directions
)

// Config configures a Platform or PartnerA client. BaseURL and APIKey come from the
// service's configuration; the zero value of the other fields selects the defaults.
type Config struct {
	// BaseURL is the partner's API root (http or https, no user info, query or fragment),
	// for example https://open.example-platform.com. Required.
	BaseURL string
	// APIKey is the partner credential, sent only in a request header (Authorization:
	// Bearer for the platform, X-Api-Key for partner A), never in URLs, errors or logs.
	// Required.
	APIKey string
	// Timeout bounds one HTTP attempt, body included; 0: DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how often an attempt failing with 5xx, 429, 408, a timeout or a
	// connection error is tried again; 0: DefaultMaxRetries, negative: never.
	MaxRetries int
	// Backoff is the first wait between attempts, doubled on each retry (capped at
	// MaxBackoff) with jitter; 0: DefaultBackoff.
	Backoff time.Duration
	// HTTPClient is the transport; nil: a dedicated client. Redirects are never followed
	// (they would carry the key to another host), whatever the client's CheckRedirect.
	HTTPClient *http.Client
}

// String describes the configuration without its key (fmt's %v and %s).
func (c Config) String() string {
	key := ""
	if c.APIKey != "" {
		key = keyRedacted
	}
	return fmt.Sprintf("partners.Config{BaseURL:%q APIKey:%s Timeout:%s MaxRetries:%d Backoff:%s}",
		c.BaseURL, key, c.Timeout, c.MaxRetries, c.Backoff)
}

// GoString describes the configuration without its key (fmt's %#v).
func (c Config) GoString() string { return c.String() }

// LogValue keeps the key out of slog records.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", c.BaseURL), slog.Bool("api_key_set", c.APIKey != ""),
		slog.Duration("timeout", c.Timeout), slog.Int("max_retries", c.MaxRetries), slog.Duration("backoff", c.Backoff))
}

// Classes of partner failure. Every error of a partner call is an *apperr.Error of
// KindUpstream (the 502 envelope) whose Cause is an *Error; errors.Is(err, ErrMalformed)
// and the like tell the class. Invalid arguments are KindInvalid, and a cancelled or
// expired caller context is returned as that context's error (wrapped).
var (
	// ErrNotConfigured: the base URL or the key is missing or invalid.
	ErrNotConfigured = errors.New("partner API not configured")
	// ErrUnavailable: 5xx, 429, 408 or connection failures, retries spent.
	ErrUnavailable = errors.New("partner unavailable")
	// ErrTimeout: no complete answer within Config.Timeout, retries spent.
	ErrTimeout = errors.New("partner did not answer in time")
	// ErrUnauthorized: 401 or 403, the configured key is wrong; never retried.
	ErrUnauthorized = errors.New("partner rejected the API key")
	// ErrRejected: another 4xx (or 3xx, or a partner error code); never retried.
	ErrRejected = errors.New("partner rejected the request")
	// ErrMalformed: the answer broke the protocol; nothing of it is used, never retried.
	ErrMalformed = errors.New("partner returned malformed data")
	// ErrLimit: AllGoods/AllSKUs found more than maxItems distinct items.
	ErrLimit = errors.New("partner listing exceeds the sync bound")
)

// Error is the detail of a partner failure, the Cause of the *apperr.Error returned.
type Error struct {
	Partner    string        // "platform" or "partner A"
	Op         string        // "list goods", "query skus"
	Class      error         // one of the Err* classes above
	StatusCode int           // the partner's last HTTP status; 0 when none
	Attempts   int           // HTTP attempts made; 0 when none was
	RetryAfter time.Duration // the partner's last Retry-After
	Detail     string        // what went wrong; never holds the key
}

// Error is a compact diagnostic; the *apperr.Error around it holds the readable message.
func (e *Error) Error() string {
	return fmt.Sprintf("partner=%q op=%q status=%d attempts=%d", e.Partner, e.Op, e.StatusCode, e.Attempts)
}

// Unwrap returns the class, for errors.Is.
func (e *Error) Unwrap() error { return e.Class }

// message is the user-facing text: "<class>: <partner> (<op>): <detail>".
func (e *Error) message() string {
	var b strings.Builder
	b.WriteString(e.Class.Error())
	b.WriteString(": " + e.Partner)
	if e.Op != "" {
		b.WriteString(" (" + e.Op + ")")
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (%d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *Error) app() *apperr.Error {
	return &apperr.Error{Kind: apperr.KindUpstream, Message: e.message(), RetryAfter: e.RetryAfter, Cause: e}
}

// client is the HTTP machinery shared by Platform and PartnerA.
type client struct {
	partner string
	base    string
	key     string
	cfgErr  string // non-empty: misconfigured; every call fails with ErrNotConfigured
	timeout time.Duration
	retries int
	backoff time.Duration
	hc      *http.Client
	auth    func(h http.Header, key string)
}

var errAttemptTimeout = errors.New("partners: attempt timeout")

func newClient(partner string, cfg Config, auth func(http.Header, string)) client {
	c := client{partner: partner, key: cfg.APIKey, timeout: cfg.Timeout, retries: cfg.MaxRetries, backoff: cfg.Backoff, auth: auth}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultMaxRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = DefaultBackoff
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient // a copy: the caller's client keeps its own CheckRedirect
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	base, err := checkBaseURL(cfg.BaseURL)
	c.base = base
	switch {
	case err != nil:
		c.cfgErr = err.Error()
	case strings.TrimSpace(cfg.APIKey) == "":
		c.cfgErr = "no API key configured"
	case len(cfg.APIKey) > maxKeyLength || strings.IndexFunc(cfg.APIKey, func(r rune) bool { return r <= ' ' || r == 0x7f || r > '~' }) >= 0:
		c.cfgErr = "the configured API key is not a printable ASCII token" // the key itself is never quoted
	}
	return c
}

func checkBaseURL(raw string) (string, error) {
	base := strings.TrimRight(strings.TrimSpace(raw), "/")
	if base == "" {
		return "", errors.New("no base URL configured")
	}
	// The URL is never quoted: a misconfigured one may hold a credential.
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("the base URL is not an absolute http(s) URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(base, "?") {
		return "", errors.New("the base URL must hold no user info, query or fragment (the key goes in its own setting)")
	}
	return base, nil
}

// failure is the outcome of one failed attempt.
type failure struct {
	err       *Error
	retryable bool
}

// call runs one logical request: attempts with retries, backoff and jitter. build makes a
// fresh request for each attempt (bound to the attempt's context); accept receives a 2xx
// JSON body and returns an error when it breaks the protocol.
func (c *client) call(ctx context.Context, op string, build func(context.Context) (*http.Request, error), accept func([]byte) error) error {
	if c.cfgErr != "" {
		return (&Error{Partner: c.partner, Op: op, Class: ErrNotConfigured, Detail: c.cfgErr}).app()
	}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return c.stopped(op, err)
		}
		f := c.attempt(ctx, op, build, accept)
		if f == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return c.stopped(op, err)
		}
		f.err.Attempts = attempt
		if !f.retryable || attempt > c.retries {
			return f.err.app()
		}
		if f.err.RetryAfter > MaxRetryAfter {
			f.err.Detail += fmt.Sprintf("; Retry-After %s exceeds %s, not retried", f.err.RetryAfter, MaxRetryAfter)
			return f.err.app()
		}
		wait := c.wait(attempt, f.err.RetryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return f.err.app() // the caller's deadline leaves no room for another attempt
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return c.stopped(op, ctx.Err())
		case <-t.C:
		}
	}
}

// wait is the pause before attempt+1: the partner's Retry-After when sent, otherwise
// Backoff·2^(attempt-1), capped, with "equal jitter" (a uniform draw in [d/2, d]).
func (c *client) wait(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := c.backoff
	for i := 1; i < attempt && d < MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxBackoff)
	half := d / 2
	return half + rand.N(d-half+1)
}

func (c *client) stopped(op string, err error) error {
	return fmt.Errorf("%s (%s): stopped: %w", c.partner, op, err)
}

func (c *client) fail(op string, class error, status int, retryable bool, format string, args ...any) *failure {
	return &failure{err: &Error{Partner: c.partner, Op: op, Class: class, StatusCode: status, Detail: fmt.Sprintf(format, args...)}, retryable: retryable}
}

func (c *client) attempt(ctx context.Context, op string, build func(context.Context) (*http.Request, error), accept func([]byte) error) *failure {
	actx, cancel := context.WithTimeoutCause(ctx, c.timeout, errAttemptTimeout)
	defer cancel()
	req, err := build(actx)
	if err != nil {
		return c.fail(op, ErrNotConfigured, 0, false, "building the request: %s", c.scrub(err.Error()))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	c.auth(req.Header, c.key)
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transport(op, actx, 0, err)
	}
	defer resp.Body.Close()
	status := resp.StatusCode
	if status/100 == 2 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
		if err != nil {
			return c.transport(op, actx, status, err)
		}
		if len(body) > MaxBodyBytes {
			return c.fail(op, ErrMalformed, status, false, "the response body exceeds %d bytes", MaxBodyBytes)
		}
		if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			return c.fail(op, ErrMalformed, status, false, "HTTP %d with Content-Type %q, not application/json", status, shorten(resp.Header.Get("Content-Type")))
		}
		if err := accept(body); err != nil {
			var pce *partnerCodeError
			if errors.As(err, &pce) {
				return c.fail(op, ErrRejected, status, false, "%s", c.scrub(err.Error()))
			}
			return c.fail(op, ErrMalformed, status, false, "%s", c.scrub(err.Error()))
		}
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	text := c.scrub(errorText(b))
	quote := ""
	if text != "" {
		quote = ": " + text
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return c.fail(op, ErrUnauthorized, status, false, "HTTP %d%s; check the configured API key", status, quote)
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		(status >= 500 && status != http.StatusNotImplemented && status != http.StatusHTTPVersionNotSupported):
		f := c.fail(op, ErrUnavailable, status, true, "HTTP %d%s", status, quote)
		f.err.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
		return f
	case status/100 == 3:
		return c.fail(op, ErrRejected, status, false, "HTTP %d redirect to %q (redirects are not followed)", status, shorten(resp.Header.Get("Location")))
	default:
		return c.fail(op, ErrRejected, status, false, "HTTP %d%s", status, quote)
	}
}

// transport classifies a failure to send the request or to read the answer. The caller
// checks its own context first; here a timeout is the attempt's.
func (c *client) transport(op string, actx context.Context, status int, err error) *failure {
	var ne net.Error
	if errors.Is(context.Cause(actx), errAttemptTimeout) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return c.fail(op, ErrTimeout, status, true, "no complete answer within %s", c.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL holds no key, but the message is shorter without it
	}
	return c.fail(op, ErrUnavailable, status, true, "connection failed: %s", c.scrub(shorten(err.Error())))
}

// scrub removes the key from partner text quoted in errors (a partner may echo it).
func (c *client) scrub(s string) string {
	if c.key != "" {
		s = strings.ReplaceAll(s, c.key, keyRedacted)
	}
	return s
}

// retryAfter parses Retry-After (delay-seconds or an HTTP date); 0 when absent or invalid.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// errorText extracts a message from an error body: {"error":{"message"}}, {"error":"…"},
// {"message":"…"} or {"msg":"…"}, else the body as text.
func errorText(b []byte) string {
	var env struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		Msg     string `json:"msg"`
	}
	if jsonUnmarshal(b, &env) == nil {
		switch e := env.Error.(type) {
		case map[string]any:
			if m, ok := e["message"].(string); ok && m != "" {
				return shorten(m)
			}
		case string:
			if e != "" {
				return shorten(e)
			}
		}
		if env.Message != "" {
			return shorten(env.Message)
		}
		if env.Msg != "" {
			return shorten(env.Msg)
		}
	}
	return shorten(string(b))
}

// shorten makes partner text safe to quote: no control characters, at most maxDetail runes.
func shorten(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > maxDetail {
		return string(r[:maxDetail]) + "…"
	}
	return s
}
