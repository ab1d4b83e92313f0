package gateway

import (
	"net/http"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/waf"
)

// WAF adapts a web application firewall to the edge chain (Options.WAF): inspect decides
// on each request before next sees it (internal/waf/crs in the binary; the gateway itself
// does not depend on the rule engine). A block is answered with the 403 envelope naming
// the rule that decided, a body larger than the WAF inspects (or costlier than its time
// budget) with the 413 envelope, and bytes the platform refuses anyway (a NUL, a lone UTF-16
// surrogate, JSON nested too deep) with the platform's 400 naming the field, all under the
// gateway's status policy. A nil inspect is no WAF.
func WAF(inspect func(*http.Request) waf.Verdict) func(http.Handler) http.Handler {
	if inspect == nil {
		return func(next http.Handler) http.Handler { return next }
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch v := inspect(r); {
			case v.TooLarge:
				// Not an attack: the body cannot be inspected, so it is refused as too large.
				WriteError(w, r, apperr.KindTooLarge, v.Message)
			case v.Invalid:
				// Not an attack: what the platform refuses itself, named as it names it.
				WriteError(w, r, apperr.KindInvalid, v.Message)
			case v.Blocked:
				WriteError(w, r, apperr.KindForbidden, v.Message)
			default:
				// The response writer is passed on untouched: the WAF does not inspect
				// responses, and Flush, Hijack and http.ResponseController keep working.
				next.ServeHTTP(w, r)
			}
		})
	}
}
