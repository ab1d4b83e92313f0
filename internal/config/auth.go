package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// AuthConfig configures tokens, login protection and the environment's token audience.
type AuthConfig struct {
	// Environment is this process's environment (dev, local, test): the audience of the
	// tokens it issues and accepts when a call names none.
	Environment string
	// AccessTTL and RefreshTTL are the token lifetimes.
	AccessTTL  time.Duration
	RefreshTTL time.Duration
	// BcryptCost is the password hashing cost.
	BcryptCost int
	// CaptchaAfterFailures is how many failed logins within LoginWindow make a captcha
	// necessary in on-failure mode.
	CaptchaAfterFailures int
	// LockAfterFailures failed logins within LoginWindow lock the user for LockDuration.
	LockAfterFailures int
	LoginWindow       time.Duration
	LockDuration      time.Duration
	// CaptchaTTL is how long a captcha can be answered.
	CaptchaTTL time.Duration
	// DefaultTenantCode is used by logins that name no tenant (the extension's login).
	DefaultTenantCode string
	// PermissionCacheTTL bounds how long a role change takes to reach permission checks.
	PermissionCacheTTL time.Duration
	// PublicRoutes are the "METHOD /path" routes the gateway lets through without a token
	// (nil: the gateway's defaults).
	PublicRoutes []string
}

// loadAuth reads the authentication variables, appending a message naming the variable to
// errs for each malformed value.
func loadAuth(getenv func(string) string, errs *[]string) AuthConfig {
	dur := Vars{getenv, errs}.Duration
	num := Vars{getenv, errs}.Integer
	a := AuthConfig{
		Environment:          getenv("SHOPMIND_ENV"),
		AccessTTL:            dur("SHOPMIND_ACCESS_TOKEN_TTL", 2*time.Hour),
		RefreshTTL:           dur("SHOPMIND_REFRESH_TOKEN_TTL", 7*24*time.Hour),
		BcryptCost:           num("SHOPMIND_BCRYPT_COST", 10, 4, 16),
		CaptchaAfterFailures: num("SHOPMIND_CAPTCHA_AFTER_FAILURES", 3, 1, 100),
		LockAfterFailures:    num("SHOPMIND_LOGIN_LOCK_AFTER_FAILURES", 10, 1, 1000),
		LoginWindow:          dur("SHOPMIND_LOGIN_FAILURE_WINDOW", 15*time.Minute),
		LockDuration:         dur("SHOPMIND_LOGIN_LOCK_DURATION", 15*time.Minute),
		CaptchaTTL:           dur("SHOPMIND_CAPTCHA_TTL", 5*time.Minute),
		DefaultTenantCode:    getenv("SHOPMIND_DEFAULT_TENANT_CODE"),
		PermissionCacheTTL:   dur("SHOPMIND_PERMISSION_CACHE_TTL", 30*time.Second),
	}
	if v := getenv("SHOPMIND_AUTH_PUBLIC_ROUTES"); v != "" {
		for _, r := range strings.Split(v, ",") {
			r = strings.TrimSpace(r)
			m, p, ok := strings.Cut(r, " ")
			if !ok || !slices.Contains([]string{"GET", "POST", "PUT", "DELETE", "PATCH"}, m) || !strings.HasPrefix(p, "/") {
				*errs = append(*errs, fmt.Sprintf("SHOPMIND_AUTH_PUBLIC_ROUTES: %q is not \"METHOD /path\"", r))
				continue
			}
			a.PublicRoutes = append(a.PublicRoutes, r)
		}
	}
	if a.Environment == "" {
		a.Environment = "dev"
	}
	if !slices.Contains([]string{"dev", "local", "test"}, a.Environment) {
		*errs = append(*errs, fmt.Sprintf("SHOPMIND_ENV: %q is not dev, local or test", a.Environment))
	}
	if a.RefreshTTL < a.AccessTTL {
		*errs = append(*errs, "SHOPMIND_REFRESH_TOKEN_TTL: shorter than SHOPMIND_ACCESS_TOKEN_TTL")
	}
	return a
}
