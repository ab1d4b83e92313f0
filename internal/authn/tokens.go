package authn

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Token types.
const (
	TypeAccess  = "access"
	TypeRefresh = "refresh"
)

// MaxTokenBytes bounds what is parsed at all (a header of 10,000 dots is refused unread).
const MaxTokenBytes = 4096

// issuer is the iss claim of every ShopMind token.
const issuer = "shopmind"

// Claims are the JWT claims: the spec's UserClaims plus token type and refresh family.
type Claims struct {
	UserID   int64   `json:"uid"`
	Username string  `json:"usr"`
	TenantID int64   `json:"tid"`
	RoleIDs  []int64 `json:"rids"`
	OrgID    int64   `json:"oid,omitempty"`
	IsAdmin  bool    `json:"adm,omitempty"`
	Type     string  `json:"typ"`
	Family   string  `json:"fam"`
	jwt.RegisteredClaims
}

// Identity turns verified claims into the caller's identity.
func (c *Claims) Identity(raw string) *Identity {
	aud := ""
	if len(c.Audience) > 0 {
		aud = c.Audience[0]
	}
	return &Identity{UserID: c.UserID, Username: c.Username, TenantID: c.TenantID, RoleIDs: c.RoleIDs,
		OrgID: c.OrgID, IsAdmin: c.IsAdmin, TokenID: c.ID, Family: c.Family, Audience: aud, Token: raw}
}

// Subject is who a token pair is issued to.
type Subject struct {
	UserID   int64
	Username string
	TenantID int64
	RoleIDs  []int64
	OrgID    int64
	IsAdmin  bool
}

// Pair is an issued access and refresh token.
type Pair struct {
	Access, Refresh               string
	AccessID, RefreshID, Family   string
	AccessExpires, RefreshExpires time.Time
}

// Tokens issues and verifies tokens with one secret.
type Tokens struct {
	secret     []byte
	AccessTTL  time.Duration
	RefreshTTL time.Duration
	now        func() time.Time

	parsers sync.Map // audience -> *jwt.Parser (built once; parsers are safe for concurrent use)

	// verified remembers tokens whose signature and claims were checked, keyed by the whole
	// token string, so a client's repeated requests cost a map lookup; expiry, audience and
	// type are re-checked on every hit, revocation by the caller.
	mu       sync.Mutex
	verified map[string]*Claims
}

// maxVerified bounds the verified-token cache; when full it starts afresh.
const maxVerified = 50_000

// NewTokens returns a token service.
func NewTokens(secret string, accessTTL, refreshTTL time.Duration) *Tokens {
	return &Tokens{secret: []byte(secret), AccessTTL: accessTTL, RefreshTTL: refreshTTL, now: time.Now,
		verified: map[string]*Claims{}}
}

// NewID returns a random token or family id.
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Issue creates a new pair for sub in the environment aud. family "" starts a new family
// (login); a refresh passes the family it rotates.
func (t *Tokens) Issue(sub Subject, aud, family string) (Pair, error) {
	if family == "" {
		family = NewID()
	}
	now := t.now().Truncate(time.Second)
	p := Pair{AccessID: NewID(), RefreshID: NewID(), Family: family,
		AccessExpires: now.Add(t.AccessTTL), RefreshExpires: now.Add(t.RefreshTTL)}
	var err error
	if p.Access, err = t.sign(sub, aud, TypeAccess, p.AccessID, family, now, p.AccessExpires); err != nil {
		return Pair{}, err
	}
	if p.Refresh, err = t.sign(sub, aud, TypeRefresh, p.RefreshID, family, now, p.RefreshExpires); err != nil {
		return Pair{}, err
	}
	return p, nil
}

func (t *Tokens) sign(sub Subject, aud, typ, id, family string, now, exp time.Time) (string, error) {
	claims := Claims{UserID: sub.UserID, Username: sub.Username, TenantID: sub.TenantID, RoleIDs: sub.RoleIDs,
		OrgID: sub.OrgID, IsAdmin: sub.IsAdmin, Type: typ, Family: family,
		RegisteredClaims: jwt.RegisteredClaims{Issuer: issuer, Subject: fmt.Sprint(sub.UserID), Audience: jwt.ClaimStrings{aud},
			ExpiresAt: jwt.NewNumericDate(exp), NotBefore: jwt.NewNumericDate(now), IssuedAt: jwt.NewNumericDate(now), ID: id}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.secret)
}

// ErrInvalidToken is any token that must be refused; the message never says more to clients.
var ErrInvalidToken = errors.New("invalid or expired token")

// Verify checks signature (HS256 only), expiry (required), not-before, issuer, audience and
// type, and returns the claims.
func (t *Tokens) Verify(raw, aud, typ string) (*Claims, error) {
	if raw == "" || len(raw) > MaxTokenBytes {
		return nil, ErrInvalidToken
	}
	t.mu.Lock()
	cached := t.verified[raw]
	t.mu.Unlock()
	if cached != nil {
		now := t.now()
		if cached.Type != typ || len(cached.Audience) != 1 || cached.Audience[0] != aud ||
			!now.Before(cached.ExpiresAt.Time) || now.Before(cached.NotBefore.Time) {
			return nil, fmt.Errorf("%w: expired, wrong audience or wrong type", ErrInvalidToken)
		}
		return cached, nil
	}
	p, ok := t.parsers.Load(aud)
	if !ok {
		p, _ = t.parsers.LoadOrStore(aud, jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithAudience(aud),
			jwt.WithIssuer(issuer),
			jwt.WithTimeFunc(t.now),
		))
	}
	claims := &Claims{}
	_, err := p.(*jwt.Parser).ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if claims.Type != typ || claims.ID == "" || claims.Family == "" || claims.UserID <= 0 || claims.TenantID <= 0 ||
		len(claims.Audience) != 1 || claims.NotBefore == nil {
		return nil, fmt.Errorf("%w: wrong type or missing claims", ErrInvalidToken)
	}
	t.mu.Lock()
	if len(t.verified) >= maxVerified {
		t.verified = make(map[string]*Claims, maxVerified/4)
	}
	t.verified[raw] = claims
	t.mu.Unlock()
	return claims, nil
}
