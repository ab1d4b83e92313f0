package crs

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/corazawaf/coraza/v3/types"

	"github.com/shopmind/shopmind/internal/inputcheck"
	"github.com/shopmind/shopmind/internal/waf"
)

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var errBodyTooLarge = errors.New("request body too large to inspect")

// readBody reads the body (up to the inspection limit) and puts it back for the handler;
// nil when the request has none.
func (m *WAF) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > m.limit {
		return nil, errBodyTooLarge
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(r.Body, m.limit+1))
	_ = r.Body.Close()
	if err == nil && int64(buf.Len()) > m.limit {
		err = errBodyTooLarge
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		// the gateway's body limit (http.MaxBytesReader) stopped a streamed body: too large,
		// not uninspectable
		err = errBodyTooLarge
	}
	if err != nil {
		bodyPool.Put(buf)
		return nil, err
	}
	body := bytes.Clone(buf.Bytes())
	bodyPool.Put(buf)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// withoutTypedQuery drops from the request target the query pairs that are typed integers
// of the contract: a plain name ([A-Za-z_][A-Za-z0-9_]*, at most 64) with a value of one to
// nine ASCII digits (page_num=2, page_size=20, limit=50, user_id=7). No rule of the six
// classes can match such a pair (the only digit-only patterns, 942220's overflow constants,
// have ten or more digits), and the backends parse them as integers; leaving them out saves
// a pass of every argument rule per pair. Everything else is kept as sent.
func withoutTypedQuery(uri string) string {
	path, query, ok := strings.Cut(uri, "?")
	if !ok || query == "" || strings.IndexByte(query, '#') >= 0 {
		return uri
	}
	var kept []string
	dropped := false
	for pair := range strings.SplitSeq(query, "&") {
		name, value, _ := strings.Cut(pair, "=")
		if typedQueryName(name) && typedQueryValue(value) {
			dropped = true
			continue
		}
		kept = append(kept, pair)
	}
	if !dropped {
		return uri
	}
	if len(kept) == 0 {
		return path
	}
	return path + "?" + strings.Join(kept, "&")
}

func typedQueryName(s string) bool {
	if s == "" || len(s) > 64 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func typedQueryValue(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// addPathArguments makes the path segments that carry more than a plain name (letters,
// digits, '-', '_', '.') arguments (ARGS_PATH, part of ARGS), in addition to what the CRS
// does: REST paths carry parameters (/api/v1/sessions/{conversation_id}), which the CRS
// otherwise sees only inside REQUEST_FILENAME, where few rules look at paranoia level 1.
// Plain-name segments ("api", "v1", "goods", "42", ".env") are left to the REQUEST_FILENAME
// rules (restricted files and extensions among them), as in the stock CRS.
func addPathArguments(tx types.Transaction, path string) (added bool) {
	n := 0
	for seg := range strings.SplitSeq(path, "/") {
		n++
		if seg == "" || plainSegment(seg) {
			continue
		}
		tx.AddPathRequestArgument("path."+strconv.Itoa(n-1), seg)
		added = true
	}
	return added
}

func plainSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// platformRefuses answers, before any rule runs, what the platform refuses itself and names
// by its field: a NUL in a query parameter, and in a JSON body a NUL, a lone UTF-16
// surrogate escape or nesting deeper than the typed JSON processor reads
// (inputcheck.JSONTextProblem). These are not attacks; rule 920270 and the body processor's
// error would answer them with a 403 naming a rule, where the client needs the field.
func platformRefuses(r *http.Request, body []byte) (waf.Verdict, bool) {
	if q := r.URL.RawQuery; strings.Contains(q, "%00") {
		for pair := range strings.SplitSeq(q, "&") {
			rawName, rawValue, _ := strings.Cut(pair, "=")
			name, err1 := url.QueryUnescape(rawName)
			value, err2 := url.QueryUnescape(rawValue)
			if err1 != nil || err2 != nil {
				continue
			}
			if strings.IndexByte(name, 0) >= 0 || strings.IndexByte(value, 0) >= 0 {
				if strings.IndexByte(name, 0) >= 0 {
					name = strconv.Quote(name)
				}
				return waf.Verdict{Blocked: true, Invalid: true, Message: name + ": must not contain NUL characters (U+0000)"}, true
			}
		}
	}
	if len(body) == 0 || !jsonContentTypeRx.MatchString(strings.ToLower(r.Header.Get("Content-Type"))) {
		return waf.Verdict{}, false
	}
	if p, bad := inputcheck.JSONTextProblem(body, jsonDepthLimit); bad {
		return waf.Verdict{Blocked: true, Invalid: true, Message: p.Error()}, true
	}
	return waf.Verdict{}, false
}
