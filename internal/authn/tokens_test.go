package authn

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const secret = "unit-test-secret-0123456789abcdef0123"

var subject = Subject{UserID: 7, Username: "alice", TenantID: 3, RoleIDs: []int64{1, 2}, OrgID: 9, IsAdmin: true}

func TestIssueAndVerify(t *testing.T) {
	tk := NewTokens(secret, time.Hour, 24*time.Hour)
	p, err := tk.Issue(subject, "dev", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tk.Verify(p.Access, "dev", TypeAccess)
	if err != nil {
		t.Fatal(err)
	}
	id := c.Identity(p.Access)
	if id.UserID != 7 || id.Username != "alice" || id.TenantID != 3 || len(id.RoleIDs) != 2 || id.OrgID != 9 ||
		!id.IsAdmin || id.TokenID != p.AccessID || id.Family != p.Family || id.Audience != "dev" {
		t.Fatalf("identity %+v", id)
	}
	if _, err := tk.Verify(p.Refresh, "dev", TypeRefresh); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(p.Refresh, "dev", TypeAccess); err == nil {
		t.Fatal("a refresh token passed as an access token")
	}
	if _, err := tk.Verify(p.Access, "dev", TypeRefresh); err == nil {
		t.Fatal("an access token passed as a refresh token")
	}
}

func sign(t *testing.T, method jwt.SigningMethod, key any, claims Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validClaims(now time.Time) Claims {
	return Claims{UserID: 7, Username: "alice", TenantID: 3, Type: TypeAccess, Family: "f1",
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "shopmind", Audience: jwt.ClaimStrings{"dev"}, ID: "j1",
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now)}}
}

// Every token attack of the acceptance list is refused.
func TestTokenAttacks(t *testing.T) {
	tk := NewTokens(secret, time.Hour, 24*time.Hour)
	now := time.Now()
	good := sign(t, jwt.SigningMethodHS256, []byte(secret), validClaims(now))
	if _, err := tk.Verify(good, "dev", TypeAccess); err != nil {
		t.Fatalf("control token refused: %v", err)
	}
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, validClaims(now)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	expired := validClaims(now)
	expired.ExpiresAt = jwt.NewNumericDate(now.Add(-time.Minute))
	future := validClaims(now)
	future.NotBefore = jwt.NewNumericDate(now.Add(time.Hour))
	future.ExpiresAt = jwt.NewNumericDate(now.Add(2 * time.Hour))
	noExp := validClaims(now)
	noExp.ExpiresAt = nil
	wrongIssuer := validClaims(now)
	wrongIssuer.Issuer = "evil"
	parts := strings.Split(good, ".")
	tamperedPayload := base64.RawURLEncoding.EncodeToString([]byte(`{"uid":1,"usr":"admin","tid":3,"adm":true,"typ":"access","fam":"f1","iss":"shopmind","aud":["dev"],"jti":"j1","exp":9999999999}`))
	cases := map[string]string{
		"alg none":               none,
		"another secret":         sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef0123"), validClaims(now)),
		"RS256 signed":           sign(t, jwt.SigningMethodRS256, rsaKey, validClaims(now)),
		"HS512 with the secret":  sign(t, jwt.SigningMethodHS512, []byte(secret), validClaims(now)),
		"expired":                sign(t, jwt.SigningMethodHS256, []byte(secret), expired),
		"not yet valid":          sign(t, jwt.SigningMethodHS256, []byte(secret), future),
		"no expiry":              sign(t, jwt.SigningMethodHS256, []byte(secret), noExp),
		"wrong issuer":           sign(t, jwt.SigningMethodHS256, []byte(secret), wrongIssuer),
		"tampered claims":        parts[0] + "." + tamperedPayload + "." + parts[2],
		"10,000 dots":            strings.Repeat(".", 10000),
		"garbage":                "not-a-jwt",
		"empty":                  "",
		"signature stripped":     parts[0] + "." + parts[1] + ".",
		"header swapped to none": base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + ".",
	}
	for name, raw := range cases {
		if _, err := tk.Verify(raw, "dev", TypeAccess); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := tk.Verify(good, "local", TypeAccess); err == nil {
		t.Error("a dev token passed in local")
	}
	if _, err := tk.Verify(good, "test", TypeAccess); err == nil {
		t.Error("a dev token passed in test")
	}
}

// A token verified once is checked again from the cache: expiry and audience still apply.
func TestVerifiedCacheRechecks(t *testing.T) {
	now := time.Now()
	tk := NewTokens(secret, time.Hour, 24*time.Hour)
	tk.now = func() time.Time { return now }
	p, _ := tk.Issue(subject, "dev", "")
	if _, err := tk.Verify(p.Access, "dev", TypeAccess); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(p.Access, "test", TypeAccess); err == nil {
		t.Fatal("cached token passed another audience")
	}
	if _, err := tk.Verify(p.Access, "dev", TypeRefresh); err == nil {
		t.Fatal("cached token passed another type")
	}
	now = now.Add(2 * time.Hour)
	if _, err := tk.Verify(p.Access, "dev", TypeAccess); err == nil {
		t.Fatal("cached token passed after expiry")
	}
}

// BenchmarkVerify measures token verification: "cold" is the first sight of a token (full
// HS256 signature and claims check by golang-jwt), "warm" a token seen before.
func BenchmarkVerify(b *testing.B) {
	tk := NewTokens(secret, time.Hour, 24*time.Hour)
	b.Run("cold", func(b *testing.B) {
		tokens := make([]string, 1024)
		for i := range tokens {
			p, _ := tk.Issue(subject, "dev", "")
			tokens[i] = p.Access
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			tk.mu.Lock()
			tk.verified = map[string]*Claims{}
			tk.mu.Unlock()
			if _, err := tk.Verify(tokens[i%len(tokens)], "dev", TypeAccess); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("warm", func(b *testing.B) {
		p, _ := tk.Issue(subject, "dev", "")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tk.Verify(p.Access, "dev", TypeAccess); err != nil {
				b.Fatal(err)
			}
		}
	})
}
