package waf

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultParanoia         = 1
	DefaultAnomalyThreshold = 5
	DefaultBodyLimit        = 4 << 20
)

// Engine selects how the rules run.
type Engine string

const (
	// EngineShopMind runs the CRS through ShopMind's optimiser (compiled rule files, skipped,
	// pruned and remembered rules, cached operators): the default.
	EngineShopMind Engine = "shopmind"
	// EngineStock runs the same CRS and directives through Coraza as shipped, without any of
	// that: for diagnosis, when a verdict of the optimised engine is in doubt.
	EngineStock Engine = "stock"
)

// Config configures the web application firewall (Coraza + OWASP CRS). The rule set is fixed
// in internal/waf/crs, its exclusions come from the contract; WAF.md documents both.
type Config struct {
	// Enabled turns the WAF on (SHOPMIND_WAF=on, the default) or off (no WAF in the chain).
	Enabled bool
	// ParanoiaLevel is the CRS blocking paranoia level, 1 (default) to 4
	// (SHOPMIND_WAF_PARANOIA). Higher levels add rules and false positives.
	ParanoiaLevel int
	// AnomalyThreshold is the CRS inbound anomaly score at which a request is blocked
	// (SHOPMIND_WAF_ANOMALY_THRESHOLD, default 5: one critical rule match).
	AnomalyThreshold int
	// BodyLimit is the largest request body the WAF inspects, bytes
	// (SHOPMIND_WAF_BODY_LIMIT, default 4 MiB, the default SHOPMIND_MAX_BODY_BYTES). A larger
	// body cannot be inspected and is refused.
	BodyLimit int64
	// Engine is EngineShopMind (default) or EngineStock (SHOPMIND_WAF_ENGINE).
	Engine Engine
	// InspectBudget bounds the time the rules may spend on one request
	// (SHOPMIND_WAF_INSPECT_BUDGET, default 10 s; 0 in a Config built by hand: the default).
	// A request whose inspection runs past it is stopped and refused with 413: send fewer
	// values per request.
	InspectBudget time.Duration
}

// DefaultInspectBudget is InspectBudget's default.
const DefaultInspectBudget = 10 * time.Second

// LoadConfig reads the WAF variables through getenv. It returns one message naming the
// variable for each malformed value (the default is kept for it).
func LoadConfig(getenv func(string) string) (Config, []string) {
	c := Config{
		Enabled:          true,
		ParanoiaLevel:    DefaultParanoia,
		AnomalyThreshold: DefaultAnomalyThreshold,
		BodyLimit:        DefaultBodyLimit,
		Engine:           EngineShopMind,
		InspectBudget:    DefaultInspectBudget,
	}
	var errs []string
	get := func(key string) string { return strings.TrimSpace(getenv(key)) }
	switch v := strings.ToLower(get("SHOPMIND_WAF")); v {
	case "", "on":
	case "off":
		c.Enabled = false
	default:
		errs = append(errs, fmt.Sprintf("SHOPMIND_WAF: %q is not on or off", v))
	}
	if v := get("SHOPMIND_WAF_PARANOIA"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 4 {
			errs = append(errs, fmt.Sprintf("SHOPMIND_WAF_PARANOIA: %q is not a level from 1 to 4", v))
		} else {
			c.ParanoiaLevel = n
		}
	}
	if v := get("SHOPMIND_WAF_ANOMALY_THRESHOLD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			errs = append(errs, fmt.Sprintf("SHOPMIND_WAF_ANOMALY_THRESHOLD: %q is not an integer from 1 to 1000", v))
		} else {
			c.AnomalyThreshold = n
		}
	}
	if v := get("SHOPMIND_WAF_BODY_LIMIT"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > 1<<30 {
			errs = append(errs, fmt.Sprintf("SHOPMIND_WAF_BODY_LIMIT: %q is not a positive number of bytes up to 1 GiB", v))
		} else {
			c.BodyLimit = n
		}
	}
	if v := get("SHOPMIND_WAF_INSPECT_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Millisecond || d > time.Minute {
			errs = append(errs, fmt.Sprintf("SHOPMIND_WAF_INSPECT_BUDGET: %q is not a duration from 10ms to 1m", v))
		} else {
			c.InspectBudget = d
		}
	}
	switch v := Engine(strings.ToLower(get("SHOPMIND_WAF_ENGINE"))); v {
	case "", EngineShopMind:
	case EngineStock:
		c.Engine = EngineStock
	default:
		errs = append(errs, fmt.Sprintf("SHOPMIND_WAF_ENGINE: %q is not shopmind or stock", v))
	}
	return c, errs
}
