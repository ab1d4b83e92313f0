package waf

import (
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, errs := LoadConfig(env(nil))
	if want := (Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: 4 << 20, Engine: EngineShopMind, InspectBudget: DefaultInspectBudget}); c != want || errs != nil {
		t.Fatalf("defaults: %+v %v, want %+v", c, errs, want)
	}
	c, errs = LoadConfig(env(map[string]string{"SHOPMIND_WAF": "off", "SHOPMIND_WAF_PARANOIA": "2",
		"SHOPMIND_WAF_ANOMALY_THRESHOLD": "10", "SHOPMIND_WAF_BODY_LIMIT": "1024", "SHOPMIND_WAF_ENGINE": " Stock ", "SHOPMIND_WAF_INSPECT_BUDGET": "500ms"}))
	if want := (Config{Enabled: false, ParanoiaLevel: 2, AnomalyThreshold: 10, BodyLimit: 1024, Engine: EngineStock, InspectBudget: 500 * time.Millisecond}); c != want || errs != nil {
		t.Fatalf("set: %+v %v, want %+v", c, errs, want)
	}
	_, errs = LoadConfig(env(map[string]string{"SHOPMIND_WAF": "maybe", "SHOPMIND_WAF_PARANOIA": "5",
		"SHOPMIND_WAF_ANOMALY_THRESHOLD": "0", "SHOPMIND_WAF_BODY_LIMIT": "-1", "SHOPMIND_WAF_ENGINE": "coraza", "SHOPMIND_WAF_INSPECT_BUDGET": "1ms"}))
	for _, name := range []string{"SHOPMIND_WAF:", "SHOPMIND_WAF_PARANOIA", "SHOPMIND_WAF_ANOMALY_THRESHOLD", "SHOPMIND_WAF_BODY_LIMIT", "SHOPMIND_WAF_ENGINE", "SHOPMIND_WAF_INSPECT_BUDGET"} {
		if !strings.Contains(strings.Join(errs, "; "), name) {
			t.Errorf("no message names %s: %v", name, errs)
		}
	}
}
