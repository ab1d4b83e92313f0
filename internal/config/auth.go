package config

// AuthConfig configures tokens, login protection and the environment's token audience.
type AuthConfig struct{}

// loadAuth reads the authentication variables, appending a message naming the variable to
// errs for each malformed value.
func loadAuth(getenv func(string) string, errs *[]string) AuthConfig {
	return AuthConfig{}
}
