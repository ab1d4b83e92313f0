package config

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The password policy of stored passwords that an operator chooses: the demo tenant's in
// production (SHOPMIND_ADMIN_PASSWORD, SHOPMIND_DEMO_ANALYST_PASSWORD) and every
// `shopmind tenant create` administrator. It lives here, in one place, because both the
// configuration and the tenant service apply it.
const (
	// MinPasswordLen is the shortest accepted password, in characters.
	MinPasswordLen = 10
	// MaxPasswordBytes is bcrypt's limit (longer input is an error, not a truncation).
	MaxPasswordBytes = 72
)

// weakPasswords are refused whatever the other rules say (compared case-insensitively):
// the development defaults and common guesses long enough to pass the length rule.
var weakPasswords = map[string]bool{
	"admin123": true, "analyst123": true, "admin12345": true, "admin123456": true, "administrator": true,
	"password": true, "password1": true, "password12": true, "password123": true, "password1234": true,
	"passw0rd123": true, "p@ssw0rd123": true, "p@ssword123": true, "changeme": true, "changeme123": true,
	"change-me-now": true, "1234567890": true, "0123456789": true, "12345678910": true, "1q2w3e4r5t": true,
	"qwertyuiop": true, "qwerty1234": true, "qwerty12345": true, "letmein123": true, "welcome123": true,
	"iloveyou123": true, "abc1234567": true, "abcd123456": true, "shopmind123": true, "shopmind2024": true,
	"shopmind2025": true, "shopmind2026": true, "secret1234": true, "default123": true, "demo123456": true,
	"analyst12345": true, "test123456": true,
}

// CheckPassword reports why password is not acceptable for user username of tenant
// tenantCode, or nil. Rules: at least MinPasswordLen characters and at most
// MaxPasswordBytes bytes, no surrounding white space or control characters, at least two
// of lower case, upper case, digits and other characters, not a known weak or default
// password, not the username or tenant code.
func CheckPassword(password, username, tenantCode string) error {
	lower := strings.ToLower(password)
	switch {
	case password == "":
		return errors.New("password is empty")
	case weakPasswords[lower]:
		return errors.New("password is a default or well-known weak password")
	case utf8.RuneCountInString(password) < MinPasswordLen:
		return fmt.Errorf("password is shorter than %d characters", MinPasswordLen)
	case len(password) > MaxPasswordBytes:
		return fmt.Errorf("password is longer than %d bytes", MaxPasswordBytes)
	case !utf8.ValidString(password):
		return errors.New("password is not valid UTF-8")
	case strings.TrimSpace(password) != password:
		return errors.New("password begins or ends with white space")
	case strings.IndexFunc(password, unicode.IsControl) >= 0:
		return errors.New("password contains control characters")
	case username != "" && lower == strings.ToLower(username):
		return errors.New("password is the same as the username")
	case tenantCode != "" && lower == strings.ToLower(tenantCode):
		return errors.New("password is the same as the tenant code")
	}
	var classes [4]bool
	for _, r := range password {
		switch {
		case unicode.IsLower(r):
			classes[0] = true
		case unicode.IsUpper(r):
			classes[1] = true
		case unicode.IsDigit(r):
			classes[2] = true
		default:
			classes[3] = true
		}
	}
	n := 0
	for _, c := range classes {
		if c {
			n++
		}
	}
	if n < 2 {
		return errors.New("password needs at least two of: lower case letters, upper case letters, digits, other characters")
	}
	return nil
}
