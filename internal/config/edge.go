package config

// EdgeConfig configures the gateway edge: environments, rate limiting, CORS, TLS, partners,
// upstream timeouts. Read by loadEdge; every variable is in the README's table.
type EdgeConfig struct{}

// loadEdge reads the edge variables, appending a message naming the variable to errs for
// each malformed value.
func loadEdge(getenv func(string) string, errs *[]string) EdgeConfig {
	return EdgeConfig{}
}
