package asktable

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Names of the objects Setup provisions; a re-run finds them by these names.
const (
	DatasourceName = "shopmind-analytics"
	PolicyName     = "shopmind-shop-rows"
	RoleName       = "shopmind-shop-role"
	BotName        = "shopmind-assistant"
	// TablesPattern is the table families the policy and the bridge allow.
	TablesPattern = "^(basic_|diy_)"
	// Role variables every token and chat carries.
	VarShopIDs  = "shop_ids"  // "(1, 2, 3)"
	VarTenantID = "tenant_id" // "7"
)

// SetupParams are the datasource to provision.
type SetupParams struct {
	// DatasourceID is an existing datasource to keep (configured); empty: found by name or
	// created.
	DatasourceID string
	Engine       string // postgresql or clickhouse
	Schema       string // schema (PostgreSQL) or database (ClickHouse) of the tables
	Access       AccessConfig
	// RebuildMeta rebuilds the metadata of an existing datasource.
	RebuildMeta bool
	// MetaTimeout bounds the wait for the metadata; PollInterval is the wait between
	// polls of meta_status.
	MetaTimeout  time.Duration
	PollInterval time.Duration
}

// SetupResult are the ids to configure.
type SetupResult struct {
	DatasourceID, PolicyID, RoleID, BotID string
	Tables                                int
	MetaRebuilt                           bool
}

// RowFilters are the policy's row filters on a datasource: every table's shop_id within
// the token's shops, and its tenant column equal to the token's tenant.
func RowFilters(schema string) []string {
	return []string{
		schema + ".*.shop_id IN {{ " + VarShopIDs + " }}",
		schema + ".*.i_tenant_id = {{ " + VarTenantID + " }}",
	}
}

// Setup provisions, or finds, the datasource (and builds its metadata when it is new, not
// built, failed, or when asked), the shop-filtered policy, the role holding it and the
// assistant bot. Every step finds what a previous run created by name, so it can be re-run;
// a datasource whose metadata fails (an unreachable database) answers 502 with the
// provider's message and the next run retries it.
func Setup(ctx context.Context, c *Client, p SetupParams) (SetupResult, error) {
	var res SetupResult
	ds, previous, err := findOrCreateDatasource(ctx, c, p)
	if err != nil {
		return res, err
	}
	res.DatasourceID = ds.ID
	if p.RebuildMeta || ds.MetaStatus != MetaSuccess {
		if err := buildMeta(ctx, c, ds, p); err != nil {
			if previous != nil { // a new connection that does not work: back to the one before
				if rerr := restore(ctx, c, ds, *previous, p); rerr != nil {
					return res, fmt.Errorf("%w (restoring the previous connection failed too: %v)", err, rerr)
				}
				return res, &apperr.Error{Kind: apperr.KindUpstream, Cause: err,
					Message: err.Error() + "; the previous connection was restored"}
			}
			return res, err
		}
		res.MetaRebuilt = true
	}
	meta, err := c.GetMeta(ctx, ds.ID)
	if err != nil {
		return res, err
	}
	res.Tables = CountTables(meta)
	pol, err := findOrCreate(ctx, c, "/policies", PolicyName, func(x Policy) string { return x.ID }, func() (Policy, error) {
		return c.CreatePolicy(ctx, CreatePolicy{Name: PolicyName, Permission: "allow", DatasetConfig: DatasetConfig{
			DatasourceIDs: []string{ds.ID},
			RegexPatterns: &RegexPatterns{TablesRegexPattern: TablesPattern},
			RowsFilters:   map[string][]string{ds.ID: RowFilters(p.Schema)},
		}})
	})
	if err != nil {
		return res, err
	}
	res.PolicyID = pol.ID
	role, err := findOrCreate(ctx, c, "/roles", RoleName, func(x Role) string { return x.ID }, func() (Role, error) {
		return c.CreateRole(ctx, CreateRole{Name: RoleName, PolicyIDs: []string{pol.ID}})
	})
	if err != nil {
		return res, err
	}
	res.RoleID = role.ID
	bot, err := findOrCreate(ctx, c, "/bots", BotName, func(x Bot) string { return x.ID }, func() (Bot, error) {
		return c.CreateBot(ctx, CreateBot{Name: BotName, DatasourceIDs: []string{ds.ID}})
	})
	if err != nil {
		return res, err
	}
	res.BotID = bot.ID
	return res, nil
}

var familyRe = regexp.MustCompile(TablesPattern)

// CountTables counts the metadata's tables of the families basic_ and diy_.
func CountTables(m Meta) int {
	n := 0
	for _, s := range m.Schemas {
		for name := range s.Tables {
			if familyRe.MatchString(name) {
				n++
			}
		}
	}
	return n
}

func findOrCreateDatasource(ctx context.Context, c *Client, p SetupParams) (Datasource, *Datasource, error) {
	if p.DatasourceID != "" {
		d, err := c.GetDatasource(ctx, p.DatasourceID)
		return d, nil, err
	}
	items, err := List[Datasource](ctx, c, "/datasources", DatasourceName)
	if err != nil {
		return Datasource{}, nil, err
	}
	for _, d := range items {
		if d.Name == DatasourceName && d.ID != "" {
			return updateAccess(ctx, c, d, p)
		}
	}
	d, err := c.CreateDatasource(ctx, CreateDatasource{Engine: p.Engine, Name: DatasourceName, AccessConfig: p.Access})
	return d, nil, err
}

// updateAccess points an existing datasource at the connection asked for when it differs
// (PATCH /v1/datasources/{id}; its metadata is then rebuilt) and returns the datasource as
// it was before the change (nil: unchanged).
func updateAccess(ctx context.Context, c *Client, d Datasource, p SetupParams) (Datasource, *Datasource, error) {
	cur := AccessConfig{}
	if d.AccessConfig != nil {
		cur = *d.AccessConfig
	}
	want := p.Access
	if d.Engine == p.Engine && cur.Host == want.Host && cur.Port == want.Port && cur.User == want.User && cur.DB == want.DB {
		return d, nil, nil
	}
	var out Datasource
	if err := c.Do(ctx, http.MethodPatch, "/datasources/"+url.PathEscape(d.ID), CreateDatasource{Engine: p.Engine, Name: d.Name, AccessConfig: want}, &out); err != nil {
		return d, nil, err
	}
	if out.ID == "" {
		out = d
	}
	out.MetaStatus = MetaUnprocessed // the new connection's metadata is built below
	return out, &d, nil
}

// restore points the datasource back at its previous connection (the password the provider
// keeps: PATCH without one) and rebuilds that metadata.
func restore(ctx context.Context, c *Client, ds, previous Datasource, p SetupParams) error {
	access := AccessConfig{}
	if previous.AccessConfig != nil {
		access = *previous.AccessConfig
		access.Password = ""
	}
	if err := c.Do(ctx, http.MethodPatch, "/datasources/"+url.PathEscape(ds.ID), CreateDatasource{Engine: previous.Engine, Name: ds.Name, AccessConfig: access}, nil); err != nil {
		return err
	}
	ds.MetaStatus = MetaUnprocessed
	return buildMeta(ctx, c, ds, p)
}

// buildMeta (re)builds a datasource's metadata and waits for it.
func buildMeta(ctx context.Context, c *Client, ds Datasource, p SetupParams) error {
	if ds.MetaStatus != MetaProcessing {
		if err := c.BuildMeta(ctx, ds.ID); err != nil {
			return err
		}
	}
	return waitMeta(ctx, c, ds.ID, p)
}

// findOrCreate returns the object named name at a list endpoint, or creates it.
func findOrCreate[T any](ctx context.Context, c *Client, path, name string, id func(T) string, create func() (T, error)) (T, error) {
	items, err := List[T](ctx, c, path, name)
	if err != nil {
		var zero T
		return zero, err
	}
	for _, x := range items {
		if id(x) != "" && nameOf(x) == name {
			return x, nil
		}
	}
	return create()
}

func nameOf(x any) string {
	switch v := x.(type) {
	case Policy:
		return v.Name
	case Role:
		return v.Name
	case Bot:
		return v.Name
	}
	return ""
}

// waitMeta polls the datasource until its metadata is built or failed.
func waitMeta(ctx context.Context, c *Client, id string, p SetupParams) error {
	timeout, every := p.MetaTimeout, p.PollInterval
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	if every <= 0 {
		every = time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		ds, err := c.GetDatasource(ctx, id)
		if err != nil {
			return err
		}
		switch ds.MetaStatus {
		case MetaSuccess:
			return nil
		case MetaFailed:
			msg := ds.MetaError
			if msg == "" {
				msg = "no reason given"
			}
			return apperr.New(apperr.KindUpstream, "NL2SQL provider could not build the metadata of datasource %s (is the database reachable from the provider?): %s; fix it and run the setup again", id, apperr.Clip(msg, 500))
		case MetaProcessing, MetaUnprocessed:
		default:
			return apperr.New(apperr.KindUpstream, "NL2SQL provider answered an unknown meta_status %q", apperr.Clip(ds.MetaStatus, 40))
		}
		if time.Now().After(deadline) {
			return apperr.New(apperr.KindTimeout, "metadata of datasource %s still %s after %s; run the setup again later", id, ds.MetaStatus, timeout)
		}
		select {
		case <-ctx.Done():
			return ctxError(ctx, "GET", "/datasources/"+id, nil)
		case <-time.After(every):
		}
	}
}

// String describes the result as configuration lines.
func (r SetupResult) String() string {
	return fmt.Sprintf("SHOPMIND_NL2SQL_DATASOURCE_ID=%s\nSHOPMIND_NL2SQL_BOT_ID=%s\nSHOPMIND_NL2SQL_ROLE_ID=%s\n", r.DatasourceID, r.BotID, r.RoleID)
}
