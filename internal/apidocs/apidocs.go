// Package apidocs serves the contract's documentation from the gateway, without a token:
// the OpenAPI 2 document at /openapi.json, its OpenAPI 3.1 rendering at /openapi-3.1.json
// (both gen/openapi, written by `make generate`) and an interactive reference at /docs:
// Swagger UI, from npm's swagger-ui-dist (Apache-2.0), vendored in swaggerui/ and embedded
// (`make swagger-ui` refreshes it; SwaggerUIVersion says which). The served documents name
// the server the request reached and the running binary's version.
package apidocs

import (
	"bytes"
	"embed"
	"io"
	"net/http"
	"strings"
	"time"

	genopenapi "github.com/shopmind/shopmind/gen/openapi"
	"github.com/shopmind/shopmind/internal/openapi"
)

// SwaggerUIVersion is the vendored swagger-ui-dist release.
const SwaggerUIVersion = "5.35.0"

// The paths served.
const (
	PathOpenAPI   = "/openapi.json"
	PathOpenAPI31 = "/openapi-3.1.json"
	PathDocs      = "/docs"
)

//go:embed swaggerui/swagger-ui-bundle.js swaggerui/swagger-ui.css
var assets embed.FS

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ShopMind API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`

const initJS = `window.ui = SwaggerUIBundle({
  url: "` + PathOpenAPI31 + `",
  dom_id: "#swagger-ui",
  deepLinking: true,
  persistAuthorization: true
});
`

// Handles reports whether path is one the handler serves.
func Handles(path string) bool {
	return path == PathOpenAPI || path == PathOpenAPI31 || path == PathDocs || strings.HasPrefix(path, PathDocs+"/")
}

// Handler serves the documents and the reference page; binaryVersion replaces the
// documents' info.version when the binary was built with another.
func Handler(binaryVersion string) http.Handler {
	docs := map[string][]byte{PathOpenAPI: genopenapi.V2, PathOpenAPI31: genopenapi.V31}
	if binaryVersion != "" && binaryVersion != genopenapi.Version {
		for p, d := range docs {
			docs[p] = bytes.Replace(d, []byte(`"version": "`+genopenapi.Version+`"`), []byte(`"version": "`+binaryVersion+`"`), 1)
		}
	}
	started := time.Now()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		switch p := r.URL.Path; p {
		case PathOpenAPI, PathOpenAPI31:
			h.Set("Content-Type", "application/json")
			h.Set("Access-Control-Allow-Origin", "*") // public and without credentials: editors and generators may fetch it
			h.Set("Cache-Control", "no-cache")
			_ = openapi.WriteServedHost(w, docs[p], r) // no copy of the document per request
		case PathDocs, PathDocs + "/":
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			_, _ = w.Write([]byte(page))
		case PathDocs + "/init.js":
			h.Set("Content-Type", "text/javascript; charset=utf-8")
			_, _ = w.Write([]byte(initJS))
		case PathDocs + "/swagger-ui-bundle.js", PathDocs + "/swagger-ui.css":
			f, err := assets.Open("swaggerui" + strings.TrimPrefix(p, PathDocs))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			defer f.Close()
			h.Set("Cache-Control", "public, max-age=3600")
			http.ServeContent(w, r, p, started, f.(io.ReadSeeker))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":404,"message":"no route for GET ` + PathDocs + `/...","data":null}` + "\n"))
		}
	})
}
