package config

// AnalyticsConfig configures the analytical store.
type AnalyticsConfig struct{}

// loadAnalytics reads the analytics variables, appending a message naming the variable to
// errs for each malformed value.
func loadAnalytics(getenv func(string) string, errs *[]string) AnalyticsConfig {
	return AnalyticsConfig{}
}
