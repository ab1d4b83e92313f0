package crx

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/crxbundle"
)

// DefaultLatestVersion is the version of the extension the binary carries (its manifest's,
// internal/crxbundle): the latest version unless SHOPMIND_CRX_LATEST_VERSION says otherwise.
var DefaultLatestVersion = crxbundle.Version()

// Defaults of the crx service's variables (CRX.md lists them).
const (
	DefaultSyncMaxBytes = 1 << 20
	DefaultErrorsPerMin = 30
)

// Config configures the crx service.
type Config struct {
	// LatestVersion is the latest released extension version (SHOPMIND_CRX_LATEST_VERSION).
	LatestVersion string
	// MinVersion is the oldest version still accepted (SHOPMIND_CRX_MIN_VERSION; default the
	// latest): older extensions are told to update and their uploads are refused (422).
	MinVersion string
	// DownloadURL is where the latest version is downloaded (SHOPMIND_CRX_DOWNLOAD_URL;
	// default the zip the platform serves, crxbundle.DownloadPath, a path on the server).
	DownloadURL string
	// ReleaseNotes are the latest version's notes, Markdown (SHOPMIND_CRX_RELEASE_NOTES).
	ReleaseNotes string
	// ReleasedAt is when the latest version was released (SHOPMIND_CRX_RELEASED_AT, RFC 3339).
	ReleasedAt time.Time
	// SyncMaxBytes bounds the serialized size of one sync batch (SHOPMIND_CRX_SYNC_MAX_BYTES);
	// larger batches answer 413.
	SyncMaxBytes int
	// ErrorsPerMinute is how many error reports one user may send per minute
	// (SHOPMIND_CRX_ERROR_RATE); more answer 429.
	ErrorsPerMinute int
}

var versionRe = regexp.MustCompile(`^[0-9]{1,5}(\.[0-9]{1,5}){0,3}$`)

// LoadConfig reads the crx variables through getenv; each malformed value gives a message
// naming its variable. It is the service's Def.Config.
func LoadConfig(getenv func(string) string) (Config, []string) {
	var errs []string
	cfg := Config{LatestVersion: DefaultLatestVersion, DownloadURL: crxbundle.DownloadPath, SyncMaxBytes: DefaultSyncMaxBytes, ErrorsPerMinute: DefaultErrorsPerMin}
	version := func(key string, dst *string) {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			if !versionRe.MatchString(v) {
				errs = append(errs, fmt.Sprintf("%s: %q is not a version such as 1.4.2", key, v))
				return
			}
			*dst = v
		}
	}
	positive := func(key string, dst *int, limit int) {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > limit {
				errs = append(errs, fmt.Sprintf("%s: %q is not an integer between 1 and %d", key, v, limit))
				return
			}
			*dst = n
		}
	}
	version("SHOPMIND_CRX_LATEST_VERSION", &cfg.LatestVersion)
	cfg.MinVersion = cfg.LatestVersion
	version("SHOPMIND_CRX_MIN_VERSION", &cfg.MinVersion)
	if compareVersions(cfg.MinVersion, cfg.LatestVersion) > 0 {
		errs = append(errs, fmt.Sprintf("SHOPMIND_CRX_MIN_VERSION: %s is newer than the latest version %s", cfg.MinVersion, cfg.LatestVersion))
	}
	if v := strings.TrimSpace(getenv("SHOPMIND_CRX_DOWNLOAD_URL")); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("SHOPMIND_CRX_DOWNLOAD_URL: %q is not an http(s) URL", v))
		} else {
			cfg.DownloadURL = v
		}
	}
	cfg.ReleaseNotes = getenv("SHOPMIND_CRX_RELEASE_NOTES")
	if v := strings.TrimSpace(getenv("SHOPMIND_CRX_RELEASED_AT")); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("SHOPMIND_CRX_RELEASED_AT: %q is not an RFC 3339 time", v))
		} else {
			cfg.ReleasedAt = t
		}
	}
	positive("SHOPMIND_CRX_SYNC_MAX_BYTES", &cfg.SyncMaxBytes, 64<<20)
	positive("SHOPMIND_CRX_ERROR_RATE", &cfg.ErrorsPerMinute, 100_000)
	return cfg, errs
}

// compareVersions compares dotted versions numerically ("1.10" > "1.9"; missing parts are
// 0): -1, 0 or 1. Both must match versionRe.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}
