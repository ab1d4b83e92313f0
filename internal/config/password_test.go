package config

import (
	"strings"
	"testing"
)

const prodSecret = "prod-secret-0123456789abcdef0123456789"

func prod(extra map[string]string) map[string]string {
	m := map[string]string{"SHOPMIND_MODE": "production", "SHOPMIND_JWT_SECRET": prodSecret}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestDevelopmentKeepsDemoDefaults(t *testing.T) {
	cfg, err := load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DemoTenant || cfg.AdminPassword != "admin123" || cfg.DemoAnalystPassword != "analyst123" {
		t.Fatalf("development: demo tenant %v, passwords %q %q", cfg.DemoTenant, cfg.AdminPassword, cfg.DemoAnalystPassword)
	}
	cfg, err = load(envOf(map[string]string{"SHOPMIND_ADMIN_PASSWORD": "a", "SHOPMIND_DEMO_ANALYST_PASSWORD": "b"}))
	if err != nil || cfg.AdminPassword != "a" || cfg.DemoAnalystPassword != "b" {
		t.Fatalf("development accepts any password: %v %+v", err, cfg)
	}
	cfg, err = load(envOf(map[string]string{"SHOPMIND_DEMO_TENANT": "false", "SHOPMIND_DEMO_DATA": "true"}))
	if err != nil || cfg.DemoTenant || cfg.DemoData {
		t.Fatalf("no demo tenant, so no demo data: %v %+v", err, cfg)
	}
}

func TestProductionHasNoDemoTenantUnlessAsked(t *testing.T) {
	// A real secret, demo data asked for and even a default admin password set: still no
	// demo tenant, so no password for it anywhere in the configuration.
	cfg, err := load(envOf(prod(map[string]string{"SHOPMIND_DEMO_DATA": "true", "SHOPMIND_ADMIN_PASSWORD": "admin123"})))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DemoTenant || cfg.DemoData || cfg.AdminPassword != "" || cfg.DemoAnalystPassword != "" {
		t.Fatalf("production: demo tenant %v, demo data %v, passwords %q %q", cfg.DemoTenant, cfg.DemoData, cfg.AdminPassword, cfg.DemoAnalystPassword)
	}
}

func TestProductionDemoTenantNeedsStrongPasswords(t *testing.T) {
	const strongAdmin, strongAnalyst = "Corr3ct-Horse-Battery", "Stap1e-Analyst-Key"
	cases := []struct {
		admin, analyst string
		want           []string // variables the error must name
	}{
		{"", "", []string{"SHOPMIND_ADMIN_PASSWORD", "SHOPMIND_DEMO_ANALYST_PASSWORD"}},
		{"admin123", strongAnalyst, []string{"SHOPMIND_ADMIN_PASSWORD"}},
		{strongAdmin, "analyst123", []string{"SHOPMIND_DEMO_ANALYST_PASSWORD"}},
		{"Short1!", strongAnalyst, []string{"SHOPMIND_ADMIN_PASSWORD"}},
		{"password123", strongAnalyst, []string{"SHOPMIND_ADMIN_PASSWORD"}},
		{"alllowercaseletters", strongAnalyst, []string{"SHOPMIND_ADMIN_PASSWORD"}},
		{strongAdmin, "QwertyUiop", []string{"SHOPMIND_DEMO_ANALYST_PASSWORD"}},
	}
	for _, c := range cases {
		_, err := load(envOf(prod(map[string]string{"SHOPMIND_DEMO_TENANT": "true",
			"SHOPMIND_ADMIN_PASSWORD": c.admin, "SHOPMIND_DEMO_ANALYST_PASSWORD": c.analyst})))
		if err == nil {
			t.Errorf("%q / %q: production started with them", c.admin, c.analyst)
			continue
		}
		for _, v := range c.want {
			if !strings.Contains(err.Error(), v) {
				t.Errorf("%q / %q: the error does not name %s: %v", c.admin, c.analyst, v, err)
			}
		}
		for _, p := range []string{c.admin, c.analyst} {
			if len(p) > 3 && strings.Contains(err.Error(), p) {
				t.Errorf("the error shows the password %q: %v", p, err)
			}
		}
	}
	cfg, err := load(envOf(prod(map[string]string{"SHOPMIND_DEMO_TENANT": "true",
		"SHOPMIND_ADMIN_PASSWORD": strongAdmin, "SHOPMIND_DEMO_ANALYST_PASSWORD": strongAnalyst})))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DemoTenant || cfg.AdminPassword != strongAdmin || cfg.DemoAnalystPassword != strongAnalyst {
		t.Fatalf("%+v", cfg)
	}
}

func TestCheckPassword(t *testing.T) {
	for _, c := range []struct {
		password, user, tenant string
		ok                     bool
	}{
		{"Corr3ct-Horse", "admin", "acme", true},
		{"correcthorse7", "admin", "acme", true},
		{"ÄÖÜäöüßéèê", "admin", "acme", true},
		{"", "admin", "acme", false},
		{"Admin123", "admin", "acme", false},  // a default, whatever the case
		{"Ab1-short", "admin", "acme", false}, // 9 characters
		{"onlylowercase", "admin", "acme", false},
		{"1234567890123", "admin", "acme", false},
		{"Jane.Doe-1984", "jane.doe-1984", "acme", false},
		{"Acme-Holding", "admin", "acme-holding", false},
		{" Corr3ct-Horse", "admin", "acme", false},
		{"Corr3ct\tHorse", "admin", "acme", false},
		{strings.Repeat("Ab1", 25), "admin", "acme", false}, // 75 bytes: above bcrypt's limit
	} {
		err := CheckPassword(c.password, c.user, c.tenant)
		if (err == nil) != c.ok {
			t.Errorf("CheckPassword(%q, %q, %q) = %v, want ok %v", c.password, c.user, c.tenant, err, c.ok)
		}
	}
}
