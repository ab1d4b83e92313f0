package stack

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil"
)

// User is a signed-in user of a running stack: its tenant and access token.
type User struct {
	*Stack
	// Tenant is the user's tenant id.
	Tenant int64
	// Token is the access token ("" for calls without one).
	Token string
}

// DemoAdmin is the demo tenant's administrator, signed in.
func (s *Stack) DemoAdmin(t testing.TB) *User {
	t.Helper()
	return &User{Stack: s, Tenant: DemoTenant(t, s.DB), Token: s.Admin(t).Access}
}

// NewTenant creates tenant code (AddTenant) and signs its administrator in.
func (s *Stack) NewTenant(t testing.TB, code string) *User {
	t.Helper()
	id := AddTenant(t, s.DB, code)
	return &User{Stack: s, Tenant: id, Token: s.Login(t, code, "admin", AdminPassword).Access}
}

// Call calls the gateway as u and decodes the envelope; it returns the HTTP status too.
func (u *User) Call(t testing.TB, method, path, body string) (int, testutil.Envelope) {
	t.Helper()
	var hdr []string
	if u.Token != "" {
		hdr = Bearer(u.Token)
	}
	r := u.Do(t, method, path, body, hdr...)
	return r.Status, testutil.DecodeEnvelope(t, method+" "+path, r.Status, r.Body)
}

// Expect calls the gateway as u and checks the answer: the envelope's code is code, the
// HTTP status is code (200 for 0: the stack maps statuses), and the message or data
// contains contains. It returns the envelope.
func (u *User) Expect(t testing.TB, method, path, body string, code int, contains string) testutil.Envelope {
	t.Helper()
	got, env := u.Call(t, method, path, body)
	status := code
	if code == 0 {
		status = http.StatusOK
	}
	if env.Code != code || got != status || !strings.Contains(env.Message+string(env.Data), contains) {
		t.Fatalf("%s %s %s: want %d containing %q, got HTTP %d %d %s %s", method, path, clip(body), code, contains,
			got, env.Code, env.Message, clip(string(env.Data)))
	}
	return env
}

// clip keeps failure messages readable.
func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}
