package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/logging"
)

// partnerPrefix starts the pass-through paths: /api-<partner>/...
const partnerPrefix = "/api-"

// partnerStrippedHeaders never reach a partner: the client's own credentials (the partner
// gets the platform's), the environment and identity headers, and the platform's token.
var partnerStrippedHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization", EnvHeader,
	"X-User-Id", "X-Tenant-Id", "X-Username", "X-Is-Admin", "X-Role-Ids"}

// partnerProxy forwards /api-<name>/<rest> to <base>/<rest> with httputil.ReverseProxy.
type partnerProxy struct {
	name      string
	route     string
	base      *url.URL
	key       string
	header    string
	timeout   time.Duration
	proxy     *httputil.ReverseProxy
	envelopes envelopeWriter
	log       *slog.Logger
}

type partnerPathKey struct{}

// errPartnerStatus marks a partner's 5xx answer.
var errPartnerStatus = errors.New("partner answered with a server error")

func newPartnerProxies(e EdgeConfig, envelopes envelopeWriter, log *slog.Logger) map[string]*partnerProxy {
	header := e.PartnerKeyHeader
	if header == "" {
		header = DefaultPartnerKeyHeader
	}
	timeout := e.PartnerTimeout
	if timeout <= 0 {
		timeout = DefaultPartnerTimeout
	}
	transport := &http.Transport{
		Proxy:                 nil, // partners are dialled directly
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	out := map[string]*partnerProxy{}
	for _, p := range e.Partners {
		pp := &partnerProxy{name: p.Name, route: partnerPrefix + p.Name + "/*", base: p.BaseURL, key: p.Key,
			header: header, timeout: timeout, envelopes: envelopes, log: log}
		pp.proxy = &httputil.ReverseProxy{
			Rewrite:        pp.rewrite,
			Transport:      transport,
			ModifyResponse: pp.modifyResponse,
			ErrorHandler:   pp.errorHandler,
			ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		out[p.Name] = pp
	}
	return out
}

// partnerFor finds the partner of an /api-<name>/... path.
func (g *Gateway) partnerFor(path string) *partnerProxy {
	rest, ok := strings.CutPrefix(path, partnerPrefix)
	if !ok || len(g.partners) == 0 {
		return nil
	}
	name, _, _ := strings.Cut(rest, "/")
	return g.partners[name]
}

func (p *partnerProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if info := infoFrom(r.Context()); info != nil {
		info.route = p.route
	}
	rest, err := p.relativePath(r)
	if err != nil {
		p.envelopes.writeKind(w, r, apperr.KindInvalid, "invalid partner path: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	p.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, partnerPathKey{}, rest)))
}

// relativePath returns the escaped path below /api-<name>, refusing anything that could leave
// the partner's base path or host: dot segments (plain or encoded), encoded slashes and
// backslashes, double encoding, empty segments and absolute-form request targets.
func (p *partnerProxy) relativePath(r *http.Request) (string, error) {
	if r.URL.Scheme != "" || r.URL.Host != "" || r.URL.Opaque != "" {
		return "", errors.New("absolute URLs are not accepted")
	}
	rest, ok := cutPathPrefix(r.URL.EscapedPath(), partnerPrefix+p.name)
	if !ok {
		return "", errors.New("not a partner path")
	}
	lower := strings.ToLower(rest)
	for _, bad := range []string{"%2f", "%5c", "%2e", "%25", "%00", "\\"} {
		if strings.Contains(lower, bad) {
			return "", fmt.Errorf("%q is not allowed in a partner path", bad)
		}
	}
	segments := strings.Split(rest, "/")
	for i, s := range segments {
		if s == "." || s == ".." {
			return "", errors.New("dot segments are not allowed")
		}
		if s == "" && i > 0 && i < len(segments)-1 {
			return "", errors.New("empty path segments are not allowed")
		}
	}
	return rest, nil
}

// rewrite builds the outbound request: the partner's scheme and host, its base path joined
// with the checked relative path, the client's query, the partner credential, and none of
// the client's credentials.
func (p *partnerProxy) rewrite(pr *httputil.ProxyRequest) {
	rest, _ := pr.In.Context().Value(partnerPathKey{}).(string)
	out := &url.URL{Scheme: p.base.Scheme, Host: p.base.Host, RawQuery: pr.In.URL.RawQuery}
	escaped := p.base.EscapedPath() + rest
	if path, err := url.PathUnescape(escaped); err == nil {
		out.Path = path
		if out.EscapedPath() != escaped {
			out.RawPath = escaped
		}
	}
	pr.Out.URL = out
	pr.Out.Host = "" // the Host header is the partner's
	h := pr.Out.Header
	for _, k := range partnerStrippedHeaders {
		h.Del(k)
	}
	h.Del(p.header)
	if p.key != "" {
		h.Set(p.header, p.key)
	}
	if id := logging.RequestID(pr.In.Context()); id != "" { // the id observe accepted or assigned
		h.Set("X-Request-Id", id)
	}
}

// modifyResponse turns a partner's 5xx into the 502 envelope and drops its cookies (they
// would be set on the platform's domain).
func (p *partnerProxy) modifyResponse(resp *http.Response) error {
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%w: %d", errPartnerStatus, resp.StatusCode)
	}
	resp.Header.Del("Set-Cookie")
	resp.Header.Del("Set-Cookie2")
	return nil
}

// errorHandler answers every partner failure (connect error, timeout, 5xx) with the 502
// envelope; the cause goes to the log only.
func (p *partnerProxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(r.Context().Err(), context.Canceled) && !errors.Is(err, errPartnerStatus) {
		p.envelopes.writeKind(w, r, apperr.KindRequestTimeout, "request canceled")
		return
	}
	reason := "unavailable"
	switch {
	case errors.Is(err, errPartnerStatus):
		reason = "answered with a server error"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		reason = "did not answer within " + p.timeout.String()
	}
	p.log.WarnContext(r.Context(), "partner failed", "partner", p.name, "error", err)
	p.envelopes.writeKind(w, r, apperr.KindUpstream, "partner "+p.name+" "+reason)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
