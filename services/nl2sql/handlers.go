package nl2sql

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/nl2sql/asktable"
)

// CreateToken creates (or reuses from the cache) a provider token restricted to the
// caller's shops.
func (b *bridge) CreateToken(ctx context.Context, req *nl2sqlv1.CreateTokenRequest) (*nl2sqlv1.CreateTokenResponse, error) {
	_, tok, err := b.callerToken(ctx, req.GetShopIds(), req.TtlSeconds, req.GetRoleId())
	if err != nil {
		return nil, err
	}
	return &nl2sqlv1.CreateTokenResponse{Token: tok.value, ExpiresAt: timestamppb.New(tok.expiresAt), ShopIds: req.GetShopIds()}, nil
}

// issued is a token the bridge handed out.
type issued struct {
	value     string
	expiresAt time.Time
	roleID    string
	p         *upstream
	ids       asktable.SetupResult
}

// callerToken is the caller and a token for its shops (CreateToken, CreateEmbedUrl).
func (b *bridge) callerToken(ctx context.Context, shops []int64, ttlSeconds *int32, roleID string) (*authn.Identity, *issued, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	tok, err := b.token(ctx, id, shops, ttlSeconds, roleID, "shop_ids")
	if err != nil {
		return nil, nil, err
	}
	return id, tok, nil
}

// token checks the shops and the role, then returns a cached token or a new one.
func (b *bridge) token(ctx context.Context, id *authn.Identity, shops []int64, ttlSeconds *int32, roleID, field string) (*issued, error) {
	if err := b.checkShops(ctx, id, shops, field); err != nil {
		return nil, err
	}
	p, ids, err := b.configured(ctx)
	if err != nil {
		return nil, err
	}
	role := ids.RoleID
	if roleID != "" {
		if err := b.ownRole(ctx, id.TenantID, roleID); err != nil {
			return nil, err
		}
		role = roleID
	}
	ttl := p.eff.TokenTTL
	if ttlSeconds != nil {
		ttl = time.Duration(*ttlSeconds) * time.Second
	}
	sorted := slices.Clone(shops)
	slices.Sort(sorted)
	// Per user: the token carries the user in its profile and its record.
	key := fmt.Sprintf("%s|%d|%d|%s|%s|%v", p.url, id.TenantID, id.UserID, role, ttl, sorted)
	now := time.Now()
	if c, ok := b.tokens.get(key, now, p.eff.CacheMargin); ok {
		return &issued{value: c.token, expiresAt: c.expiresAt, roleID: role, p: p, ids: ids}, nil
	}
	value, err := p.client.CreateToken(ctx, asktable.CreateToken{AKRole: "asker", TokenTTL: int(ttl / time.Second),
		ChatRole:    asktable.ChatRole{RoleID: role, RoleVariables: roleVariables(id.TenantID, sorted)},
		UserProfile: map[string]string{"tenant_id": strconv.FormatInt(id.TenantID, 10), "user_id": strconv.FormatInt(id.UserID, 10)}})
	if err != nil {
		return nil, err
	}
	expires := now.Add(ttl)
	if _, err := b.pool.Exec(ctx, `INSERT INTO nl2sql.tokens (token_hash, tenant_id, user_id, role_id, shop_ids, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (token_hash) DO NOTHING`, hashToken(value), id.TenantID, id.UserID, role, sorted, expires); err != nil {
		return nil, err
	}
	b.tokens.put(key, cachedToken{token: value, expiresAt: expires}, now)
	return &issued{value: value, expiresAt: expires, roleID: role, p: p, ids: ids}, nil
}

// roleVariables are the role variables of a token and its chats: the shops as the list
// literal the policy's "shop_id IN {{ shop_ids }}" expands, and the tenant.
func roleVariables(tenant int64, shops []int64) map[string]string {
	parts := make([]string, len(shops))
	for i, s := range shops {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return map[string]string{asktable.VarShopIDs: "(" + strings.Join(parts, ", ") + ")", asktable.VarTenantID: strconv.FormatInt(tenant, 10)}
}

func hashToken(t string) string {
	h := sha256.Sum256([]byte(t))
	return hex.EncodeToString(h[:])
}

// checkShops answers 403 unless every shop belongs to the caller's tenant, asking the basic
// service (which owns shops) with the caller's token.
func (b *bridge) checkShops(ctx context.Context, id *authn.Identity, shops []int64, field string) error {
	if len(shops) == 0 {
		return apperr.Invalid(field, "repeated.min_items", "at least one shop id is required")
	}
	conn, err := b.dial("basic")
	if err != nil {
		return &apperr.Error{Kind: apperr.KindUnavailable, Message: "cannot check shop ownership: basic service unavailable", Cause: err}
	}
	want := map[int64]bool{}
	for _, s := range shops {
		want[s] = true
	}
	client := basicv1.NewBasicDataServiceClient(conn)
	octx := authn.Outgoing(ctx)
	size := int32(100)
	for page := int32(1); len(want) > 0; page++ {
		resp, err := client.ListShops(octx, &basicv1.ListShopsRequest{PageNum: &page, PageSize: &size, Sort: "id,asc"})
		if err != nil {
			return err
		}
		for _, s := range resp.GetItems() {
			delete(want, s.GetId())
		}
		if int64(page)*int64(size) >= resp.GetTotal() || len(resp.GetItems()) == 0 {
			break
		}
	}
	if len(want) > 0 {
		var bad []string
		for _, s := range shops {
			if want[s] {
				bad = append(bad, strconv.FormatInt(s, 10))
			}
		}
		return apperr.New(apperr.KindForbidden, "%s: shop %s does not belong to your tenant", field, strings.Join(bad, ", "))
	}
	return nil
}

// ownRole answers 403 unless role was created for the tenant by CreatePolicy.
func (b *bridge) ownRole(ctx context.Context, tenant int64, role string) error {
	var n int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM nl2sql.roles WHERE role_id = $1 AND tenant_id = $2`, role, tenant).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return apperr.New(apperr.KindForbidden, "role_id: role %s was not created for your tenant (create one with POST /api/v1/nl2sql/policy)", role)
	}
	return nil
}

// CreateChat creates a provider chat bound to one of the tenant's tokens and a bot.
func (b *bridge) CreateChat(ctx context.Context, req *nl2sqlv1.CreateChatRequest) (*nl2sqlv1.CreateChatResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var role string
	var shops []int64
	var expires time.Time
	err = b.pool.QueryRow(ctx, `SELECT role_id, shop_ids, expires_at FROM nl2sql.tokens
		WHERE token_hash = $1 AND tenant_id = $2 AND expires_at > now()`, hashToken(req.GetToken()), id.TenantID).Scan(&role, &shops, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.Invalid("token", "token.known", "not a live token of your tenant: create one with POST /api/v1/nl2sql/token")
	}
	if err != nil {
		return nil, err
	}
	p, ids, err := b.configured(ctx)
	if err != nil {
		return nil, err
	}
	tok := &issued{value: req.GetToken(), expiresAt: expires, roleID: role, p: p, ids: ids}
	ch, err := b.chat(ctx, id, tok, shops, req.GetBotId())
	if err != nil {
		return nil, err
	}
	return &nl2sqlv1.CreateChatResponse{ChatId: ch.ID, BotId: ch.BotID, CreatedAt: timestamppb.New(ch.CreatedAt)}, nil
}

// chat creates the provider chat for a token and records it for the tenant.
func (b *bridge) chat(ctx context.Context, id *authn.Identity, tok *issued, shops []int64, botID string) (asktable.Chat, error) {
	if botID == "" {
		botID = tok.ids.BotID
	}
	// No name: the provider titles the chat with its first question.
	ch, err := tok.p.client.CreateChat(ctx, asktable.CreateChat{BotID: botID, RoleID: tok.roleID, RoleVariables: roleVariables(id.TenantID, shops)})
	if err != nil {
		return ch, err
	}
	if !idRe.MatchString(ch.ID) {
		return ch, apperr.New(apperr.KindUpstream, "NL2SQL provider answered POST /chats with a malformed chat id")
	}
	if ch.BotID == "" {
		ch.BotID = botID
	}
	if ch.CreatedAt.IsZero() {
		ch.CreatedAt = time.Now()
	}
	_, err = b.pool.Exec(ctx, `INSERT INTO nl2sql.chats (chat_id, tenant_id, user_id, bot_id, shop_ids, token_expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (chat_id) DO NOTHING`, ch.ID, id.TenantID, id.UserID, ch.BotID, shops, tok.expiresAt, ch.CreatedAt)
	return ch, err
}

// GetChat returns a chat of the caller's tenant, with what the provider knows of it.
func (b *bridge) GetChat(ctx context.Context, req *nl2sqlv1.GetChatRequest) (*nl2sqlv1.GetChatResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	out := &nl2sqlv1.GetChatResponse{ChatId: req.GetChatId()}
	var created, expires time.Time
	err = b.pool.QueryRow(ctx, `SELECT bot_id, shop_ids, created_at, token_expires_at FROM nl2sql.chats WHERE chat_id = $1 AND tenant_id = $2`,
		req.GetChatId(), id.TenantID).Scan(&out.BotId, &out.ShopIds, &created, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("chat", req.GetChatId())
	}
	if err != nil {
		return nil, err
	}
	out.CreatedAt, out.TokenExpiresAt = timestamppb.New(created), timestamppb.New(expires)
	p, err := b.provider()
	if err != nil {
		return nil, err
	}
	ch, err := p.client.GetChat(ctx, req.GetChatId())
	if err != nil {
		return nil, err
	}
	out.Title, out.MessageCount = apperr.Clip(ch.Name, 256), int32(max(ch.MessageCount, 0))
	return out, nil
}

// CreateEmbedUrl creates a token and a chat and composes the provider's embed URL.
func (b *bridge) CreateEmbedUrl(ctx context.Context, req *nl2sqlv1.CreateEmbedUrlRequest) (*nl2sqlv1.CreateEmbedUrlResponse, error) {
	id, tok, err := b.callerToken(ctx, req.GetShopIds(), req.TtlSeconds, req.GetRoleId())
	if err != nil {
		return nil, err
	}
	sorted := slices.Clone(req.GetShopIds())
	slices.Sort(sorted)
	ch, err := b.chat(ctx, id, tok, sorted, req.GetBotId())
	if err != nil {
		return nil, err
	}
	base := tok.p.eff.EmbedURL
	if base == "" {
		u, err := url.Parse(tok.p.url)
		if err != nil {
			return nil, apperr.Internal(err)
		}
		base = u.Scheme + "://" + u.Host
	}
	q := url.Values{"chatId": {ch.ID}, "apiKey": {tok.value}}
	return &nl2sqlv1.CreateEmbedUrlResponse{EmbedUrl: strings.TrimRight(base, "/") + "/embed?" + q.Encode(), ChatId: ch.ID,
		Token: tok.value, ExpiresAt: timestamppb.New(tok.expiresAt)}, nil
}

// CreatePolicy creates an access policy on the configured datasource: the table pattern,
// the row filter and the caller's tenant filter; attached to a role of the tenant.
func (b *bridge) CreatePolicy(ctx context.Context, req *nl2sqlv1.CreatePolicyRequest) (*nl2sqlv1.CreatePolicyResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	pattern := req.GetTablePattern()
	if pattern == "" {
		pattern = asktable.TablesPattern
	}
	if err := checkTablePattern(pattern); err != nil {
		return nil, err
	}
	filter := req.GetRowFilter()
	if len(req.GetShopIds()) > 0 {
		vals := make([]string, len(req.GetShopIds()))
		for i, s := range req.GetShopIds() {
			vals[i] = strconv.FormatInt(s, 10)
		}
		filter = &nl2sqlv1.RowFilter{Column: "shop_id", Operator: "in", Values: vals}
	}
	if err := b.checkFilterShops(ctx, id, req, filter); err != nil {
		return nil, err
	}
	if req.GetRoleId() != "" {
		if err := b.ownRole(ctx, id.TenantID, req.GetRoleId()); err != nil {
			return nil, err
		}
	}
	p, ids, err := b.configured(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetDatasourceId() != ids.DatasourceID {
		return nil, apperr.Invalid("datasource_id", "datasource_id.configured", fmt.Sprintf("must be the configured datasource %s", ids.DatasourceID))
	}
	sqlExpr := filterSQL(filter)
	fingerprint := policyFingerprint(req.GetRoleId(), pattern, ids.DatasourceID, filter)
	answer := func(rec policyRecord) *nl2sqlv1.CreatePolicyResponse {
		return &nl2sqlv1.CreatePolicyResponse{PolicyId: rec.PolicyID, DatasourceId: rec.DatasourceID, RoleId: rec.RoleID, TablePattern: pattern,
			RowFilter: filter, RowFilterSql: sqlExpr, CreatedAt: timestamppb.New(rec.CreatedAt)}
	}
	if req.GetName() != "" { // a retry by name answers the policy already made (record.go)
		rec, found, err := b.namedPolicy(ctx, id.TenantID, req.GetName())
		if err != nil {
			return nil, err
		}
		if found {
			if err := sameNamed(rec, fingerprint); err != nil {
				return nil, err
			}
			return answer(rec), nil
		}
	}
	schema := p.eff.DSSchema
	name := req.GetName()
	if name == "" {
		name = fmt.Sprintf("shopmind-t%d-%s", id.TenantID, randomSuffix())
	}
	pol, err := p.client.CreatePolicy(ctx, asktable.CreatePolicy{Name: name, Permission: "allow", DatasetConfig: asktable.DatasetConfig{
		DatasourceIDs: []string{ids.DatasourceID},
		RegexPatterns: &asktable.RegexPatterns{TablesRegexPattern: pattern},
		RowsFilters: map[string][]string{ids.DatasourceID: {
			schema + ".*." + sqlExpr,
			fmt.Sprintf("%s.*.i_tenant_id = %d", schema, id.TenantID),
		}},
	}})
	if err != nil {
		return nil, err
	}
	roleID := req.GetRoleId()
	if roleID == "" {
		role, err := p.client.CreateRole(ctx, asktable.CreateRole{Name: "shopmind-t" + strconv.FormatInt(id.TenantID, 10) + "-" + pol.ID, PolicyIDs: []string{pol.ID}})
		if err != nil {
			return nil, err
		}
		roleID = role.ID
	} else if err := b.addPolicyToRole(ctx, p, roleID, pol.ID); err != nil {
		return nil, err
	}
	created := pol.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	// From here the provider has the change: the answer is the policy (record.go).
	rec := policyRecord{PolicyID: pol.ID, RoleID: roleID, DatasourceID: ids.DatasourceID, TenantID: id.TenantID,
		Name: req.GetName(), Fingerprint: fingerprint, CreatedAt: created}
	b.record(ctx, rec)
	return answer(rec), nil
}

// checkFilterShops answers 403 when a literal shop_id filter names a shop of another tenant
// and 400 when it names something that is not a shop id.
func (b *bridge) checkFilterShops(ctx context.Context, id *authn.Identity, req *nl2sqlv1.CreatePolicyRequest, f *nl2sqlv1.RowFilter) error {
	if f.GetColumn() != "shop_id" || len(f.GetValues()) == 0 {
		return nil
	}
	field := "row_filter.values"
	if len(req.GetShopIds()) > 0 {
		field = "shop_ids"
	}
	shops := make([]int64, len(f.GetValues()))
	for i, v := range f.GetValues() {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return apperr.Invalid(field, "shop_id", fmt.Sprintf("%q is not a shop id", apperr.Clip(v, 40)))
		}
		shops[i] = n
	}
	return b.checkShops(ctx, id, shops, field)
}

var numberRe = regexp.MustCompile(`^-?[0-9]{1,18}(\.[0-9]{1,9})?$`)

// filterSQL is the row filter as the provider's expression: "<column> IN (v, ...)",
// "<column> = v", or the variable "{{ shop_ids }}"; numbers stay bare, other values are
// single-quoted with quotes doubled.
func filterSQL(f *nl2sqlv1.RowFilter) string {
	if f.GetVariable() != "" {
		if f.GetOperator() == "eq" {
			return f.GetColumn() + " = {{ " + f.GetVariable() + " }}"
		}
		return f.GetColumn() + " IN {{ " + f.GetVariable() + " }}"
	}
	vals := make([]string, len(f.GetValues()))
	for i, v := range f.GetValues() {
		if numberRe.MatchString(v) {
			vals[i] = v
		} else {
			vals[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
	}
	if f.GetOperator() == "eq" {
		return f.GetColumn() + " = " + vals[0]
	}
	return f.GetColumn() + " IN (" + strings.Join(vals, ", ") + ")"
}

// checkTablePattern answers 400 unless pattern is RE2 anchored at the start and can only
// match names of the families basic_ and diy_: no alternative at its top level escapes the
// prefix the contract requires.
func checkTablePattern(pattern string) error {
	bad := func(msg string) error { return apperr.Invalid("table_pattern", "table_pattern.family", msg) }
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return bad("not a valid regular expression: " + err.Error())
	}
	if !strings.HasPrefix(pattern, "^basic_") && !strings.HasPrefix(pattern, "^diy_") && !strings.HasPrefix(pattern, "^(basic_|diy_)") {
		return bad("must begin with ^basic_, ^diy_ or ^(basic_|diy_)")
	}
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText {
		return bad("must be one anchored expression (a top-level | would match tables outside basic_ and diy_)")
	}
	compiled := regexp.MustCompile(pattern)
	for _, probe := range []string{"pg_class", "information_schema", "users", "system", "tables", "_basic_x", "Basic_x", "diy", "basic"} {
		if compiled.MatchString(probe) {
			return bad(fmt.Sprintf("matches %q, outside the table families basic_ and diy_", probe))
		}
	}
	return nil
}

// Role leases (nl2sql.role_leases): roleLease bounds a holder's turn (longer than the two
// provider calls it covers with the default timeout and retries, about 70 s at worst),
// roleLeaseWait how long another waits before a 409.
const (
	roleLease     = 3 * time.Minute
	roleLeaseWait = 15 * time.Second
	roleLeasePoll = 20 * time.Millisecond
)

// addPolicyToRole appends a policy to a role's list at the provider. The provider only
// replaces the whole list, so concurrent additions (of any replica) take turns under a
// lease on the role: without it, two read the same list and the second write drops the
// first's policy.
func (b *bridge) addPolicyToRole(ctx context.Context, p *upstream, roleID, policyID string) error {
	holder := randomSuffix()
	deadline := time.Now().Add(roleLeaseWait)
	for {
		tag, err := b.pool.Exec(ctx, `INSERT INTO nl2sql.role_leases (role_id, holder, until) VALUES ($1, $2, clock_timestamp() + $3::interval)
			ON CONFLICT (role_id) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until
				WHERE nl2sql.role_leases.until < clock_timestamp()`, roleID, holder, roleLease.String())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			break
		}
		if time.Now().After(deadline) {
			return apperr.New(apperr.KindConflict, "role %s is being changed by another request; retry", roleID)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(roleLeasePoll):
		}
	}
	defer func() {
		// Detached: the request's end must not keep the others waiting for the lease's expiry.
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, _ = b.pool.Exec(rctx, `DELETE FROM nl2sql.role_leases WHERE role_id = $1 AND holder = $2`, roleID, holder)
	}()
	role, err := p.client.GetRole(ctx, roleID)
	if err != nil {
		return err
	}
	_, err = p.client.UpdateRole(ctx, roleID, asktable.CreateRole{PolicyIDs: append(role.PolicyIDs, policyID)})
	return err
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SetupDatasource provisions the datasource, its metadata, the policy, role and bot.
func (b *bridge) SetupDatasource(ctx context.Context, req *nl2sqlv1.SetupDatasourceRequest) (*nl2sqlv1.SetupDatasourceResponse, error) {
	p, err := b.provider()
	if err != nil {
		return nil, err
	}
	// One setup at a time in this process (the provisioning on first use included): two
	// interleaved runs would rebuild each other's metadata.
	b.autoMu.Lock()
	defer b.autoMu.Unlock()
	res, err := asktable.Setup(ctx, p.client, b.setupParams(p.eff, req))
	if err != nil {
		return nil, err
	}
	rebuilt := res.MetaRebuilt
	if p.kind == "builtin" {
		// A build of the provisioning (at start, or in a request) no call has reported yet
		// is reported by this one (metadata_rebuilt: built since the previous setup call).
		rebuilt = rebuilt || b.autoBuilt[p.url]
		b.auto[p.url], b.autoBuilt[p.url] = res, false
	}
	return &nl2sqlv1.SetupDatasourceResponse{DatasourceId: res.DatasourceID, Tables: int32(res.Tables), BotId: res.BotID,
		RoleId: res.RoleID, MetadataRebuilt: rebuilt, PolicyId: res.PolicyID}, nil
}

// Health reports the configuration and whether the provider answers and accepts the key.
func (b *bridge) Health(ctx context.Context, _ *nl2sqlv1.HealthRequest) (*nl2sqlv1.HealthResponse, error) {
	p, perr := b.provider()
	eff := p.eff
	out := &nl2sqlv1.HealthResponse{Provider: p.kind, ConfigSource: eff.source, CacheReachable: true, CheckedAt: timestamppb.Now()}
	key := eff.APIKey
	if p.kind == "builtin" {
		key = eff.ProviderKey()
	}
	out.ApiKeyConfigured = key != "" && !IsPlaceholder(key)
	out.BotConfigured, out.DatasourceConfigured = eff.BotID != "" || p.kind == "builtin", eff.DatasourceID != "" || p.kind == "builtin"
	if perr != nil {
		out.Status, out.Message = "unhealthy", perr.Error()
		return out, nil
	}
	client := *p.client
	client.Retries = 0
	hctx, cancel := context.WithTimeout(ctx, eff.Timeout)
	defer cancel()
	start := time.Now()
	_, err := client.Me(hctx)
	elapsed := time.Since(start)
	switch {
	case err == nil:
		out.ProviderReachable, out.ApiKeyValid, out.ProviderLatencyMs = true, true, max(elapsed.Milliseconds(), 1)
	case errors.Is(err, asktable.ErrKeyRejected):
		out.ProviderReachable, out.ProviderLatencyMs = true, max(elapsed.Milliseconds(), 1)
		out.Status, out.Message = "unhealthy", err.Error()
		return out, nil
	default:
		out.Status, out.Message = "unhealthy", err.Error()
		return out, nil
	}
	if !out.BotConfigured || !out.DatasourceConfigured || (eff.RoleID == "" && p.kind != "builtin") {
		out.Status, out.Message = "degraded", "provider reachable; set SHOPMIND_NL2SQL_DATASOURCE_ID, SHOPMIND_NL2SQL_BOT_ID and SHOPMIND_NL2SQL_ROLE_ID (`shopmind nl2sql setup` prints them)"
		return out, nil
	}
	out.Status = "healthy"
	return out, nil
}

// cleanup drops expired tokens' records hourly (a day after they expire).
func (b *bridge) cleanup(ctx context.Context) {
	service.Every(ctx, time.Hour, func() {
		if _, err := b.pool.Exec(ctx, `DELETE FROM nl2sql.tokens WHERE expires_at < now() - interval '1 day'`); err != nil && ctx.Err() == nil {
			b.log.Warn("nl2sql: dropping expired tokens", "error", err)
		}
	})
}
