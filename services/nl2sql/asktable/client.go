package asktable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
)

// ErrKeyRejected is the cause of the error of a call the provider refused with 401 or 403.
var ErrKeyRejected = errors.New("API key rejected")

// Client defaults.
const (
	DefaultTimeout = 10 * time.Second
	DefaultRetries = 2
	DefaultBackoff = 200 * time.Millisecond
	// maxBackoff caps one wait between attempts.
	maxBackoff = 5 * time.Second
	// maxBody bounds what is read of an answer.
	maxBody = 8 << 20
)

// Client calls the provider's /v1 API with a bearer API key. The zero values of its
// settings take the defaults above. Safe for concurrent use.
type Client struct {
	// BaseURL is the provider's address, with or without the trailing /v1
	// (https://api.asktable.com, http://127.0.0.1:8091).
	BaseURL string
	// Key is the API key (or a temporary token) sent as "Authorization: Bearer <key>".
	Key string
	// KeyVariable names the setting that holds Key, for the messages of credential errors
	// (SHOPMIND_NL2SQL_API_KEY).
	KeyVariable string
	// Timeout bounds one attempt; Retries is how many more attempts a 5xx, a 429, a timeout
	// or a connection failure gets; Backoff is the first wait, doubled each retry, with
	// jitter.
	Timeout time.Duration
	Retries int
	Backoff time.Duration
	// HTTP is the transport; nil: a client without its own timeout (Timeout applies).
	HTTP *http.Client
}

// root is the /v1 root of BaseURL.
func (c *Client) root() string {
	return strings.TrimSuffix(strings.TrimRight(c.BaseURL, "/"), "/v1") + "/v1"
}

func (c *Client) keyVar() string {
	if c.KeyVariable == "" {
		return "SHOPMIND_NL2SQL_API_KEY"
	}
	return c.KeyVariable
}

// Do sends one API call (path below /v1, such as "/chats") with in as the JSON body (nil:
// none) and decodes the answer into out (nil: discarded). Failures are *apperr.Error:
// 503 without a key, 502 when the provider rejects the key, answers 5xx or malformed data,
// or cannot be reached (after the retries), 404 when it does not know the object, 504
// when ctx ends first.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	if c.BaseURL == "" {
		return apperr.New(apperr.KindUnavailable, "NL2SQL provider not configured: set SHOPMIND_NL2SQL_API_URL")
	}
	if c.Key == "" {
		return apperr.New(apperr.KindUnavailable, "NL2SQL provider API key not configured: set %s", c.keyVar())
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return apperr.Internal(err)
		}
	}
	timeout, backoff, retries := c.Timeout, c.Backoff, c.Retries
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if backoff <= 0 {
		backoff = DefaultBackoff
	}
	if retries < 0 {
		retries = 0
	}
	target := c.root() + path
	var last error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			wait := backoff << (attempt - 1)
			if wait > maxBackoff || wait <= 0 {
				wait = maxBackoff
			}
			wait = wait/2 + rand.N(wait/2+1) // jitter: half to the full wait
			select {
			case <-ctx.Done():
				return ctxError(ctx, method, path, last)
			case <-time.After(wait):
			}
		}
		status, data, err := c.attempt(ctx, method, target, body, timeout)
		if err != nil {
			if ctx.Err() != nil {
				return ctxError(ctx, method, path, err)
			}
			last = err // a connection failure or the attempt's timeout: retried
			continue
		}
		switch {
		case status >= 200 && status < 300:
			if out == nil {
				return nil
			}
			if err := json.Unmarshal(data, out); err != nil {
				return &apperr.Error{Kind: apperr.KindUpstream,
					Message: fmt.Sprintf("NL2SQL provider answered %s %s with malformed data", method, path), Cause: err}
			}
			return nil
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			return &apperr.Error{Kind: apperr.KindUpstream, Cause: ErrKeyRejected, Message: fmt.Sprintf(
				"NL2SQL provider rejected the API key (HTTP %d on %s %s): check %s", status, method, path, c.keyVar())}
		case status == http.StatusNotFound:
			return apperr.New(apperr.KindNotFound, "NL2SQL provider: %s", providerMessage(data, "not found"))
		case status == http.StatusTooManyRequests || status >= 500:
			last = fmt.Errorf("HTTP %d: %s", status, providerMessage(data, http.StatusText(status)))
			continue
		default: // another 4xx: our request was refused; not retried
			return apperr.New(apperr.KindUpstream, "NL2SQL provider refused %s %s (HTTP %d): %s",
				method, path, status, providerMessage(data, http.StatusText(status)))
		}
	}
	return &apperr.Error{Kind: apperr.KindUpstream, Cause: last,
		Message: fmt.Sprintf("NL2SQL provider at %s failed %s %s after %d attempts: %s", redact(c.BaseURL), method, path, retries+1, errText(last))}
}

// attempt is one HTTP exchange bounded by timeout.
func (c *Client) attempt(ctx context.Context, method, target string, body []byte, timeout time.Duration) (int, []byte, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, err // a body cut off by the timeout: retried like a timeout
	}
	return resp.StatusCode, data, nil
}

// ctxError is the error when the caller's context ends during a call.
func ctxError(ctx context.Context, method, path string, cause error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &apperr.Error{Kind: apperr.KindTimeout, Message: fmt.Sprintf("NL2SQL provider did not answer %s %s in time", method, path), Cause: cause}
	}
	return &apperr.Error{Kind: apperr.KindRequestTimeout, Message: "request cancelled", Cause: ctx.Err()}
}

func errText(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "no answer"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	default:
		return apperr.Clip(err.Error(), 300)
	}
}

// providerMessage is the message of a provider's error body, or def.
func providerMessage(data []byte, def string) string {
	var e ErrorBody
	if json.Unmarshal(data, &e) == nil {
		if e.Message != "" {
			return apperr.Clip(e.Message, 300)
		}
		if s, ok := e.Detail.(string); ok && s != "" {
			return apperr.Clip(s, 300)
		}
	}
	return def
}

// redact drops credentials from a URL for messages.
func redact(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// The API calls ShopMind uses.

// Me checks the key (GET /v1/auth/me).
func (c *Client) Me(ctx context.Context) (Me, error) {
	var m Me
	return m, c.Do(ctx, http.MethodGet, "/auth/me", nil, &m)
}

// CreateToken creates a temporary token (POST /v1/auth/tokens).
func (c *Client) CreateToken(ctx context.Context, in CreateToken) (string, error) {
	var t Token
	if err := c.Do(ctx, http.MethodPost, "/auth/tokens", in, &t); err != nil {
		return "", err
	}
	if t.Value() == "" {
		return "", apperr.New(apperr.KindUpstream, "NL2SQL provider answered POST /auth/tokens without a token")
	}
	return t.Value(), nil
}

// CreateChat creates a chat (POST /v1/chats).
func (c *Client) CreateChat(ctx context.Context, in CreateChat) (Chat, error) {
	var ch Chat
	if err := c.Do(ctx, http.MethodPost, "/chats", in, &ch); err != nil {
		return ch, err
	}
	return ch, needID("POST /chats", ch.ID)
}

// GetChat reads a chat (GET /v1/chats/{id}).
func (c *Client) GetChat(ctx context.Context, id string) (Chat, error) {
	var ch Chat
	return ch, c.Do(ctx, http.MethodGet, "/chats/"+url.PathEscape(id), nil, &ch)
}

// Ask sends a question to a chat (POST /v1/chats/{id}/messages).
func (c *Client) Ask(ctx context.Context, chatID, question string) (Message, error) {
	var m Message
	return m, c.Do(ctx, http.MethodPost, "/chats/"+url.PathEscape(chatID)+"/messages", CreateMessage{Question: question}, &m)
}

// CreatePolicy creates a policy (POST /v1/policies).
func (c *Client) CreatePolicy(ctx context.Context, in CreatePolicy) (Policy, error) {
	var p Policy
	if err := c.Do(ctx, http.MethodPost, "/policies", in, &p); err != nil {
		return p, err
	}
	return p, needID("POST /policies", p.ID)
}

// CreateRole creates a role (POST /v1/roles).
func (c *Client) CreateRole(ctx context.Context, in CreateRole) (Role, error) {
	var r Role
	if err := c.Do(ctx, http.MethodPost, "/roles", in, &r); err != nil {
		return r, err
	}
	return r, needID("POST /roles", r.ID)
}

// GetRole reads a role (GET /v1/roles/{id}).
func (c *Client) GetRole(ctx context.Context, id string) (Role, error) {
	var r Role
	return r, c.Do(ctx, http.MethodGet, "/roles/"+url.PathEscape(id), nil, &r)
}

// UpdateRole replaces a role's policies (PATCH /v1/roles/{id}).
func (c *Client) UpdateRole(ctx context.Context, id string, in CreateRole) (Role, error) {
	var r Role
	return r, c.Do(ctx, http.MethodPatch, "/roles/"+url.PathEscape(id), in, &r)
}

// CreateDatasource creates a datasource (POST /v1/datasources).
func (c *Client) CreateDatasource(ctx context.Context, in CreateDatasource) (Datasource, error) {
	var d Datasource
	if err := c.Do(ctx, http.MethodPost, "/datasources", in, &d); err != nil {
		return d, err
	}
	return d, needID("POST /datasources", d.ID)
}

// GetDatasource reads a datasource (GET /v1/datasources/{id}).
func (c *Client) GetDatasource(ctx context.Context, id string) (Datasource, error) {
	var d Datasource
	return d, c.Do(ctx, http.MethodGet, "/datasources/"+url.PathEscape(id), nil, &d)
}

// BuildMeta starts (re)building a datasource's metadata (POST /v1/datasources/{id}/meta,
// processed asynchronously: poll GetDatasource's meta_status).
func (c *Client) BuildMeta(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodPost, "/datasources/"+url.PathEscape(id)+"/meta?async_process_meta=true", struct{}{}, nil)
}

// GetMeta reads a datasource's metadata (GET /v1/datasources/{id}/meta).
func (c *Client) GetMeta(ctx context.Context, id string) (Meta, error) {
	var m Meta
	return m, c.Do(ctx, http.MethodGet, "/datasources/"+url.PathEscape(id)+"/meta", nil, &m)
}

// CreateBot creates a bot (POST /v1/bots).
func (c *Client) CreateBot(ctx context.Context, in CreateBot) (Bot, error) {
	var b Bot
	if err := c.Do(ctx, http.MethodPost, "/bots", in, &b); err != nil {
		return b, err
	}
	return b, needID("POST /bots", b.ID)
}

// List reads the first page (up to 100 items) of a list endpoint ("/datasources",
// "/bots", "/roles", "/policies") filtered by name.
func List[T any](ctx context.Context, c *Client, path, name string) ([]T, error) {
	var p Page[T]
	q := url.Values{"page": {"1"}, "size": {"100"}}
	if name != "" {
		q.Set("name", name)
	}
	return p.Items, c.Do(ctx, http.MethodGet, path+"?"+q.Encode(), nil, &p)
}

func needID(call, id string) error {
	if id == "" {
		return apperr.New(apperr.KindUpstream, "NL2SQL provider answered %s without an id", call)
	}
	return nil
}
