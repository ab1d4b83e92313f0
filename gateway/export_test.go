package gateway

// PublicRoute exposes EdgeAuth's public-route matching to the external tests.
func PublicRoute(e *EdgeAuth, method, path string) bool { return e.public(method, path) }
