package tenant

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mojocn/base64Captcha"
	"golang.org/x/crypto/bcrypt"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
)

// Captcha modes (SHOPMIND_CAPTCHA_MODE).
const (
	captchaAlways    = "always"
	captchaOnFailure = "on-failure"
	captchaOff       = "off"
)

// auth is the login, token and captcha logic.
type auth struct {
	store       *store
	tokens      *authn.Tokens
	revocations *authn.Revocations
	cfg         config.AuthConfig
	captchaMode string
	log         *slog.Logger
	// dummyHash is compared against when the user is unknown, so timing does not tell.
	dummyHash []byte
}

func newAuth(st *store, tokens *authn.Tokens, rev *authn.Revocations, cfg *config.Config, log *slog.Logger) (*auth, error) {
	dummy, err := bcrypt.GenerateFromPassword([]byte("shopmind-dummy-password"), cfg.Auth.BcryptCost)
	if err != nil {
		return nil, err
	}
	return &auth{store: st, tokens: tokens, revocations: rev, cfg: cfg.Auth, captchaMode: cfg.CaptchaMode, log: log, dummyHash: dummy}, nil
}

// errBadCredentials is the one answer for an unknown tenant, unknown user or wrong password.
var errBadCredentials = apperr.New(apperr.KindUnauthenticated, "invalid tenant, username or password")

// loginInput is a login attempt.
type loginInput struct {
	TenantCode, Username, Password string
	CaptchaID, CaptchaCode         string
	// TenantPath is true on the tenant path (/api/v1/tenant/auth/login), where mode
	// `always` applies; the alternate /api/v1/auth/login needs a captcha only on failure.
	TenantPath bool
	Audience   string
}

// loginResult is a successful login.
type loginResult struct {
	Pair authn.Pair
	User *userRecord
}

func (a *auth) login(ctx context.Context, in loginInput) (*loginResult, error) {
	if in.TenantCode == "" {
		in.TenantCode = a.cfg.DefaultTenantCode
		if in.TenantCode == "" {
			return nil, apperr.Invalid("tenant_code", "required", "tenant_code is required")
		}
	}
	state, err := a.store.loginState(ctx, in.TenantCode, in.Username, a.cfg.LoginWindow)
	if err != nil {
		return nil, err
	}
	if !state.LockedUntil.IsZero() {
		return nil, lockedError(state.LockedUntil)
	}
	needCaptcha := a.captchaMode == captchaAlways && in.TenantPath ||
		a.captchaMode != captchaOff && state.RecentFailures >= a.cfg.CaptchaAfterFailures
	if needCaptcha && in.CaptchaID == "" {
		return nil, apperr.Invalid("captcha_code", "captcha.required", "captcha required: get one from /api/v1/tenant/auth/captcha")
	}
	if in.CaptchaID != "" && a.captchaMode != captchaOff {
		if err := a.checkCaptcha(ctx, in.CaptchaID, in.CaptchaCode); err != nil {
			return nil, err
		}
	}
	user, err := a.store.userByLogin(ctx, in.TenantCode, in.Username)
	if err != nil {
		return nil, err
	}
	hash := a.dummyHash
	if user != nil {
		hash = []byte(user.PasswordHash)
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(in.Password)) != nil || user == nil {
		n, until, err := a.store.recordFailure(ctx, in.TenantCode, in.Username, a.cfg.LoginWindow, a.cfg.LockAfterFailures, a.cfg.LockDuration)
		if err != nil {
			return nil, err
		}
		if !until.IsZero() {
			return nil, lockedError(until)
		}
		a.log.InfoContext(ctx, "login failed", "tenant", in.TenantCode, "username", in.Username, "recent_failures", n)
		return nil, errBadCredentials
	}
	if user.TenantStatus != "enabled" {
		return nil, apperr.New(apperr.KindForbidden, "tenant %s is disabled", user.TenantCode)
	}
	if user.Status != "enabled" {
		return nil, apperr.New(apperr.KindForbidden, "user %s is disabled", user.Username)
	}
	pair, err := a.issue(ctx, a.store.pool, user, in.Audience, "")
	if err != nil {
		return nil, err
	}
	if err := a.store.loginSucceeded(ctx, in.TenantCode, in.Username, user.ID); err != nil {
		return nil, err
	}
	return &loginResult{Pair: pair, User: user}, nil
}

// lockedError is the 429 of a user locked after too many failed logins.
func lockedError(until time.Time) error {
	left := time.Until(until).Round(time.Second)
	return &apperr.Error{Kind: apperr.KindTooManyRequests, RetryAfter: left,
		Message: fmt.Sprintf("too many failed logins: try again in %s", left)}
}

// changePassword checks the caller's current password (a wrong one counts as a failed
// login, with the same lock), stores the new one, ends every session of the caller and
// issues a new pair, all in one transaction.
func (a *auth) changePassword(ctx context.Context, dir *directory, id *authn.Identity, current, next string) (authn.Pair, error) {
	u, err := a.store.user(ctx, id.TenantID, id.UserID)
	if err != nil {
		return authn.Pair{}, err
	}
	if u == nil {
		return authn.Pair{}, apperr.New(apperr.KindUnauthenticated, "user no longer exists")
	}
	state, err := a.store.loginState(ctx, u.TenantCode, u.Username, a.cfg.LoginWindow)
	if err != nil {
		return authn.Pair{}, err
	}
	if !state.LockedUntil.IsZero() {
		return authn.Pair{}, lockedError(state.LockedUntil)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(current)) != nil {
		_, until, err := a.store.recordFailure(ctx, u.TenantCode, u.Username, a.cfg.LoginWindow, a.cfg.LockAfterFailures, a.cfg.LockDuration)
		if err != nil {
			return authn.Pair{}, err
		}
		if !until.IsZero() {
			return authn.Pair{}, lockedError(until)
		}
		return authn.Pair{}, apperr.Invalid("current_password", "password.current", "is not your current password")
	}
	if current == next {
		return authn.Pair{}, apperr.Invalid("new_password", "password.unchanged", "must differ from the current password")
	}
	var pair authn.Pair
	_, err = dir.setPassword(ctx, id.TenantID, id.UserID, next, "new_password", func(tx pgx.Tx, u *userRecord) error {
		var err error
		pair, err = a.issue(ctx, tx, u, id.Audience, "")
		return err
	})
	return pair, err
}

// issue signs a pair for user and records the refresh token.
func (a *auth) issue(ctx context.Context, q querier, user *userRecord, aud, family string) (authn.Pair, error) {
	orgID := int64(0)
	if user.OrgID != nil {
		orgID = *user.OrgID
	}
	pair, err := a.tokens.Issue(authn.Subject{UserID: user.ID, Username: user.Username, TenantID: user.TenantID,
		RoleIDs: user.RoleIDs, OrgID: orgID, IsAdmin: user.IsAdmin}, aud, family)
	if err != nil {
		return authn.Pair{}, err
	}
	err = a.store.insertRefresh(ctx, q, refreshRecord{ID: pair.RefreshID, Family: pair.Family, Audience: aud,
		UserID: user.ID, TenantID: user.TenantID, ExpiresAt: pair.RefreshExpires})
	return pair, err
}

var errRefreshInvalid = apperr.New(apperr.KindUnauthenticated, "invalid or expired refresh token")

// refresh rotates a refresh token: a new pair, the old refresh token spent. Presenting a spent
// refresh token again is reuse: the whole family (every token of that login) is revoked.
func (a *auth) refresh(ctx context.Context, raw, aud string) (authn.Pair, error) {
	claims, err := a.tokens.Verify(raw, aud, authn.TypeRefresh)
	if err != nil {
		return authn.Pair{}, errRefreshInvalid
	}
	if a.revocations.Revoked(claims.ID, claims.Family) {
		return authn.Pair{}, apperr.New(apperr.KindUnauthenticated, "refresh token has been revoked")
	}
	var pair authn.Pair
	reused := false
	err = pgx.BeginFunc(ctx, a.store.pool, func(tx pgx.Tx) error {
		rec, err := lockRefresh(ctx, tx, claims.ID)
		if err != nil {
			return err
		}
		if rec == nil || rec.RevokedAt != nil || rec.UserID != claims.UserID {
			return errRefreshInvalid
		}
		if rec.UsedAt != nil {
			reused = true
			return nil
		}
		if _, err := tx.Exec(ctx, "UPDATE tenant.refresh_tokens SET used_at = now() WHERE id = $1", rec.ID); err != nil {
			return err
		}
		user, err := scanUser(tx.QueryRow(ctx, "SELECT "+userColumns+userFrom+" WHERE u.tenant_id = $1 AND u.id = $2", rec.TenantID, rec.UserID))
		if err != nil {
			return err
		}
		if user == nil || user.Status != "enabled" || user.TenantStatus != "enabled" {
			return apperr.New(apperr.KindForbidden, "user or tenant is disabled")
		}
		pair, err = a.issue(ctx, tx, user, aud, rec.Family)
		return err
	})
	if err != nil {
		return authn.Pair{}, err
	}
	if reused {
		if err := a.revokeFamily(ctx, claims.Family); err != nil {
			return authn.Pair{}, err
		}
		a.log.WarnContext(ctx, "refresh token reuse: family revoked", "user_id", claims.UserID, "family", claims.Family)
		return authn.Pair{}, apperr.New(apperr.KindUnauthenticated,
			"refresh token reuse detected: this refresh token was already used, so every token of the session has been revoked; log in again")
	}
	return pair, nil
}

// revokeFamily revokes every token of a login: refresh rows and, through the revocation
// list, the access tokens issued in it.
func (a *auth) revokeFamily(ctx context.Context, family string) error {
	latest, err := revokeFamilyRows(ctx, a.store.pool, family)
	if err != nil {
		return err
	}
	// Access tokens of the family expire within AccessTTL of the last rotation.
	until := time.Now().Add(a.tokens.AccessTTL)
	if latest.After(until) {
		until = latest
	}
	return a.revocations.Revoke(ctx, authn.KindFamily, family, until)
}

// logout revokes the caller's access token until it expires and its whole refresh family.
func (a *auth) logout(ctx context.Context, id *authn.Identity) error {
	claims, err := a.tokens.Verify(id.Token, id.Audience, authn.TypeAccess)
	if err != nil {
		return errRefreshInvalid
	}
	if err := a.revocations.Revoke(ctx, authn.KindToken, id.TokenID, claims.ExpiresAt.Time); err != nil {
		return err
	}
	return a.revokeFamily(ctx, id.Family)
}

// captcha makes a new captcha: a PNG data URI, the answer kept server-side (hashed).
func (a *auth) captcha(ctx context.Context) (id, image string, ttl time.Duration, err error) {
	answer := randomDigits(5)
	driver := base64Captcha.NewDriverDigit(80, 240, len(answer), 0.6, 60)
	item, err := driver.DrawCaptcha(answer)
	if err != nil {
		return "", "", 0, err
	}
	id = authn.NewID()
	sum := sha256.Sum256([]byte(id + ":" + answer))
	if err := a.store.saveCaptcha(ctx, id, sum[:], time.Now().Add(a.cfg.CaptchaTTL)); err != nil {
		return "", "", 0, err
	}
	return id, item.EncodeB64string(), a.cfg.CaptchaTTL, nil
}

// checkCaptcha consumes the captcha: unknown or expired is 410, a wrong answer 400.
func (a *auth) checkCaptcha(ctx context.Context, id, code string) error {
	hash, found, err := a.store.takeCaptcha(ctx, id)
	if err != nil {
		return err
	}
	if !found {
		return apperr.New(apperr.KindGone, "captcha expired or already used: get a new one")
	}
	sum := sha256.Sum256([]byte(id + ":" + strings.TrimSpace(code)))
	if subtle.ConstantTimeCompare(sum[:], hash) != 1 {
		return apperr.Invalid("captcha_code", "captcha.wrong", "wrong captcha code: get a new captcha")
	}
	return nil
}

func randomDigits(n int) string {
	b := make([]byte, n)
	for i := range b {
		d, _ := rand.Int(rand.Reader, big.NewInt(10))
		b[i] = byte('0' + d.Int64())
	}
	return string(b)
}
