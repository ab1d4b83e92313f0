package restapi

// Upload is a route whose request body is a file sent as it is (basic's imports): the
// service registers its handler on the mux (its Registration), which streams the body into
// a client-streaming RPC; the gateway lets the body through uncapped by
// SHOPMIND_MAX_BODY_BYTES (the service enforces its own size limit and answers 413), shows
// the WAF the request without its body (a file of data is not arguments; its headers, path
// and query are still inspected), and sets no upstream timeout (the service has its own time
// budget). Path is the route template on the service's mux.
type Upload struct {
	Method string
	Path   string
}
