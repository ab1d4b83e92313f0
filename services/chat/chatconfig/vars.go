package chatconfig

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// vars reads typed variables; each malformed value appends one message naming the variable
// to errs and yields the default.
type vars struct {
	getenv func(string) string
	errs   *[]string
}

func (v vars) str(key, def string) string {
	if s := strings.TrimSpace(v.getenv(key)); s != "" {
		return s
	}
	return def
}

func (v vars) duration(key string, def time.Duration) time.Duration {
	s := strings.TrimSpace(v.getenv(key))
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		*v.errs = append(*v.errs, fmt.Sprintf("%s: %q is not a positive duration", key, s))
		return def
	}
	return d
}

func (v vars) integer(key string, def, lo, hi int) int {
	s := strings.TrimSpace(v.getenv(key))
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		*v.errs = append(*v.errs, fmt.Sprintf("%s: %q is not an integer from %d to %d", key, s, lo, hi))
		return def
	}
	return n
}
