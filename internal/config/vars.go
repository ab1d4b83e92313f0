package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Vars reads typed variables for every package's loader; each malformed value appends one
// message naming the variable to Errs and yields the default.
type Vars struct {
	Getenv func(string) string
	Errs   *[]string
}

// Str is the trimmed value of key, or def when it is empty.

func (v Vars) Str(key, def string) string {
	if s := strings.TrimSpace(v.Getenv(key)); s != "" {
		return s
	}
	return def
}

// Duration is key as a positive duration, or def.
func (v Vars) Duration(key string, def time.Duration) time.Duration {
	s := strings.TrimSpace(v.Getenv(key))
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		*v.Errs = append(*v.Errs, fmt.Sprintf("%s: %q is not a positive duration", key, s))
		return def
	}
	return d
}

// Integer is key as an integer from lo to hi, or def.
func (v Vars) Integer(key string, def, lo, hi int) int {
	s := strings.TrimSpace(v.Getenv(key))
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		*v.Errs = append(*v.Errs, fmt.Sprintf("%s: %q is not an integer from %d to %d", key, s, lo, hi))
		return def
	}
	return n
}
