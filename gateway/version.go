package gateway

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/shopmind/shopmind/internal/apperr"
)

// vendorMediaType is ShopMind's versioned media type: application/vnd.shopmind.v2+json.
var vendorMediaType = regexp.MustCompile(`^application/vnd\.shopmind\.v([1-9][0-9]{0,2})(\+json)?$`)

// apiVersionPath splits /api/v<n>/<rest> into n and /<rest>.
var apiVersionPath = regexp.MustCompile(`^/api/v([1-9][0-9]{0,2})(/.*)$`)

// acceptPreferences reads an Accept header: the ShopMind versions asked for, most preferred
// first, and whether any other media type is acceptable too (then the URL's version is fine).
func acceptPreferences(values []string) (versions []int, other bool) {
	type pref struct {
		version int
		q       float64
		order   int
	}
	var prefs []pref
	n := 0
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			n++
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				other = true
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					q = f
				}
			}
			if q <= 0 {
				continue
			}
			m := vendorMediaType.FindStringSubmatch(mt)
			if m == nil {
				other = true
				continue
			}
			ver, _ := strconv.Atoi(m[1])
			prefs = append(prefs, pref{ver, q, n})
		}
	}
	sort.SliceStable(prefs, func(i, j int) bool { return prefs[i].q > prefs[j].q })
	for _, p := range prefs {
		versions = append(versions, p.version)
	}
	return versions, other
}

// negotiateVersion applies Accept: application/vnd.shopmind.v<N>+json to an /api/v<M>/ path.
// N == M changes nothing; otherwise the request moves to /api/v<N>/ with the same rest of path
// when that route is registered on the environment's mux. When no asked-for version exists
// and the client accepts nothing else, the answer is the 406 envelope. Plain media types
// (application/json, */*) leave the request alone. It reports whether to go on.
func (g *Gateway) negotiateVersion(w http.ResponseWriter, r *http.Request, mux *runtime.ServeMux) bool {
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return true
	}
	m := apiVersionPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return true
	}
	versions, other := acceptPreferences(accept)
	if len(versions) == 0 {
		return true
	}
	current, _ := strconv.Atoi(m[1])
	for _, v := range versions {
		if v == current {
			return true
		}
		twin := *r.URL
		prefix := "/api/v" + strconv.Itoa(v)
		twin.Path = prefix + m[2]
		if twin.RawPath != "" {
			twin.RawPath = prefix + strings.TrimPrefix(twin.RawPath, "/api/v"+m[1])
		}
		if g.hasRoute(mux, r.Method, &twin) {
			*r.URL = twin
			return true
		}
	}
	if other {
		return true
	}
	g.envelopes.writeKind(w, r, apperr.KindNotAcceptable, fmt.Sprintf(
		"Accept: API version v%d is not available for %s %s (this path is v%d)", versions[0], r.Method, r.URL.Path, current))
	return false
}

// probeKey marks a routing probe: the mux middleware records the match and returns without
// calling the handler.
type probeKey struct{}

type probeResult struct{ matched bool }

// hasRoute reports whether the mux has a route for method and URL, by asking the mux itself
// (grpc-gateway does not list its patterns): nothing is called, nothing is written.
func (g *Gateway) hasRoute(mux *runtime.ServeMux, method string, u *url.URL) bool {
	res := &probeResult{}
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), probeKey{}, res), method, "/", nil)
	if err != nil {
		return false
	}
	req.URL = u
	mux.ServeHTTP(discardWriter{}, req)
	return res.matched
}

// discardWriter swallows a probe's routing error answer.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
