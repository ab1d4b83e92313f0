// Package provider is ShopMind's built-in NL2SQL provider: it serves the subset of
// AskTable's /v1 API the bridge uses (services/nl2sql/asktable), so the bridge works on a
// fresh machine without an external provider, and its tests run against a real
// implementation of the protocol. Metadata comes from the analytical catalog
// (internal/analytics/catalog); questions become SQL through a SQLWriter (the offline
// writer here; a model when one is wired); the SQL runs through an Executor, which must
// enforce the tenant and the row filters of the chat's role (the SQL sandbox).
//
// Authentication: the API key (Bearer) may do everything; a temporary token from
// POST /v1/auth/tokens may only read and use chats playing its role with its variables.
package provider

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/nl2sql/asktable"
)

// Scope is what an Executor must enforce on every table the SQL reads: the tenant column
// equal to TenantID and each row filter (column IN values).
type Scope struct {
	TenantID   int64
	RowFilters []RowFilter
	// Tables are the tables the role's policies allow (policy.go); a statement reading
	// another is refused.
	Tables []string
}

// RowFilter restricts rows to Column IN Values (on tables having the column).
type RowFilter struct {
	Table  string // "": every table having the column
	Column string
	Values []int64
}

// Result is what an Executor returns.
type Result struct {
	SQL       string // the SQL actually run (after rewriting)
	Columns   []string
	Rows      [][]any
	Truncated bool
}

// Executor runs SQL written by someone else within a Scope, read-only.
type Executor interface {
	Run(ctx context.Context, scope Scope, sql string, maxRows int) (*Result, error)
	// Dialect is the SQL dialect it runs: postgresql or clickhouse.
	Dialect() string
}

// SQLWriter turns a question into one SELECT over the catalog's tables, without tenant or
// row filters (the Executor adds them), in the dialect of engine (postgresql, clickhouse).
type SQLWriter interface {
	WriteSQL(ctx context.Context, question, engine string, cat *catalog.Catalog) (sql, explanation string, err error)
}

// Options configure the provider.
type Options struct {
	// Key is the API key that may do everything. Required.
	Key string
	// Pool holds the objects (schema nl2sql_provider).
	Pool *pgxpool.Pool
	// Catalog is the metadata when Catalogs is nil; nil: catalog.Base().
	Catalog *catalog.Catalog
	// Catalogs reads the analytical store's catalog: catalog.Base() plus the tenant-defined
	// diy_* tables found in the store (cached by the caller: it is read on every question
	// and policy). The metadata, the policies' table patterns and columns and the writer all
	// see these tables; the executor's sandbox must read the same catalog. nil: Catalog.
	Catalogs func(ctx context.Context) (*catalog.Catalog, error)
	// Writer turns questions into SQL; nil: Offline.
	Writer SQLWriter
	// Exec runs the SQL; nil: questions answer 503 with ExecErr (no sandbox to run them
	// safely).
	Exec    Executor
	ExecErr error
	// MaxRows caps the rows of one answer.
	MaxRows int
	// MetaDelay is how long a metadata build stays "processing" at least (so clients poll
	// meta_status as they must with the real provider); 0: none.
	MetaDelay time.Duration
	Log       *slog.Logger
}

// Server is the built-in provider.
type Server struct {
	o   Options
	mux *http.ServeMux
}

// New returns the provider.
func New(o Options) *Server {
	if o.Catalog == nil {
		o.Catalog = catalog.Base()
	}
	if o.Writer == nil {
		o.Writer = Offline{}
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 1000
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, mux: http.NewServeMux()}
	admin, any := s.admin, s.authed
	s.mux.Handle("GET /v1/auth/me", any(s.me))
	s.mux.Handle("POST /v1/auth/tokens", admin(s.createToken))
	s.mux.Handle("POST /v1/datasources", admin(s.createDatasource))
	s.mux.Handle("GET /v1/datasources", admin(s.list("datasource")))
	s.mux.Handle("GET /v1/datasources/{id}", admin(s.getDatasource))
	s.mux.Handle("PATCH /v1/datasources/{id}", admin(s.updateDatasource))
	s.mux.Handle("POST /v1/datasources/{id}/meta", admin(s.buildMeta))
	s.mux.Handle("GET /v1/datasources/{id}/meta", admin(s.getMeta))
	s.mux.Handle("POST /v1/policies", admin(s.createPolicy))
	s.mux.Handle("GET /v1/policies", admin(s.list("policy")))
	s.mux.Handle("GET /v1/policies/{id}", admin(s.get("policy")))
	s.mux.Handle("POST /v1/roles", admin(s.createRole))
	s.mux.Handle("GET /v1/roles", admin(s.list("role")))
	s.mux.Handle("GET /v1/roles/{id}", admin(s.get("role")))
	s.mux.Handle("PATCH /v1/roles/{id}", admin(s.updateRole))
	s.mux.Handle("POST /v1/bots", admin(s.createBot))
	s.mux.Handle("GET /v1/bots", admin(s.list("bot")))
	s.mux.Handle("GET /v1/bots/{id}", admin(s.get("bot")))
	s.mux.Handle("POST /v1/chats", any(s.createChat))
	s.mux.Handle("GET /v1/chats/{id}", any(s.getChat))
	s.mux.Handle("POST /v1/chats/{id}/messages", any(s.ask))
	s.mux.Handle("GET /v1/chats/{id}/messages", any(s.messages))
	s.mux.HandleFunc("GET /embed", s.embed)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return s
}

// catalog is the metadata in effect: the store's (diy_* tables included) or the fixed one.
func (s *Server) catalog(ctx context.Context) (*catalog.Catalog, error) {
	if s.o.Catalogs == nil {
		return s.o.Catalog, nil
	}
	cat, err := s.o.Catalogs(ctx)
	if err != nil {
		return nil, httpErr{http.StatusServiceUnavailable, "the analytical store's catalog is unavailable: " + err.Error()}
	}
	return cat, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	s.mux.ServeHTTP(w, r)
}

// caller is who calls: the API key (token nil) or a temporary token.
type caller struct {
	token *tokenGrant
}

// tokenGrant is what a temporary token allows: chats playing its role with its variables.
type tokenGrant struct {
	RoleID    string            `json:"role_id"`
	Variables map[string]string `json:"role_variables"`
	ExpiresAt time.Time         `json:"expires_at"`
}

type handler func(w http.ResponseWriter, r *http.Request, c caller) error

// authed accepts the API key or a live temporary token.
func (s *Server) authed(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || key == "" {
			fail(w, http.StatusUnauthorized, "missing bearer API key")
			return
		}
		var c caller
		if subtle.ConstantTimeCompare([]byte(key), []byte(s.o.Key)) != 1 {
			g, err := s.grant(r.Context(), key)
			if err != nil {
				s.answerErr(w, err)
				return
			}
			if g == nil {
				fail(w, http.StatusUnauthorized, "invalid API key or token")
				return
			}
			c.token = g
		}
		if err := h(w, r, c); err != nil {
			s.answerErr(w, err)
		}
	})
}

// admin accepts the API key only.
func (s *Server) admin(h handler) http.Handler {
	return s.authed(func(w http.ResponseWriter, r *http.Request, c caller) error {
		if c.token != nil {
			return httpErr{http.StatusForbidden, "a temporary token may only use chats"}
		}
		return h(w, r, c)
	})
}

// httpErr is an error answered with its status and message.
type httpErr struct {
	status int
	msg    string
}

func (e httpErr) Error() string { return e.msg }

func (s *Server) answerErr(w http.ResponseWriter, err error) {
	var he httpErr
	if errors.As(err, &he) {
		fail(w, he.status, he.msg)
		return
	}
	s.o.Log.Error("nl2sql provider", "error", err)
	fail(w, http.StatusInternalServerError, "internal error")
}

func fail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, asktable.ErrorBody{Detail: msg, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads the JSON body into v (unknown fields ignored, as the real API does).
func decode(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return httpErr{http.StatusRequestEntityTooLarge, "body too large"}
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		data = []byte("{}")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return httpErr{http.StatusUnprocessableEntity, "malformed JSON body: " + err.Error()}
	}
	return nil
}

func newID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

func hashToken(t string) string {
	h := sha256.Sum256([]byte(t))
	return hex.EncodeToString(h[:])
}

// Storage: one JSON object per row.

func (s *Server) put(ctx context.Context, kind, id, name string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.o.Pool.Exec(ctx, `INSERT INTO nl2sql_provider.objects (kind, id, name, body) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kind, id) DO UPDATE SET name = EXCLUDED.name, body = EXCLUDED.body`, kind, id, name, body)
	return err
}

// load reads an object into v; a missing one is a 404.
func (s *Server) load(ctx context.Context, kind, id string, v any) error {
	var body []byte
	err := s.o.Pool.QueryRow(ctx, `SELECT body FROM nl2sql_provider.objects WHERE kind = $1 AND id = $2`, kind, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return httpErr{http.StatusNotFound, kind + " " + id + " not found"}
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

func (s *Server) grant(ctx context.Context, token string) (*tokenGrant, error) {
	var g tokenGrant
	err := s.load(ctx, "token", hashToken(token), &g)
	var he httpErr
	if errors.As(err, &he) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !time.Now().Before(g.ExpiresAt) {
		return nil, nil
	}
	return &g, nil
}

var idRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// list answers a page of a kind's objects, filtered by ?name=.
func (s *Server) list(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, _ caller) error {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		size, _ := strconv.Atoi(r.URL.Query().Get("size"))
		page, size = min(max(page, 1), 1<<31), min(max(size, 1), 100) // page bounded: the OFFSET cannot overflow
		if r.URL.Query().Get("size") == "" {
			size = 50
		}
		name := r.URL.Query().Get("name")
		rows, err := s.o.Pool.Query(r.Context(), `SELECT body, count(*) OVER () FROM nl2sql_provider.objects
			WHERE kind = $1 AND ($2 = '' OR name = $2) ORDER BY created_at, id LIMIT $3 OFFSET $4`, kind, name, size, (page-1)*size)
		if err != nil {
			return err
		}
		defer rows.Close()
		out := asktable.Page[json.RawMessage]{Items: []json.RawMessage{}, Page: page, Size: size}
		for rows.Next() {
			var body []byte
			var total int
			if err := rows.Scan(&body, &total); err != nil {
				return err
			}
			out.Items, out.Total = append(out.Items, body), total
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if kind == "datasource" { // never answer the password
			for i, raw := range out.Items {
				var d asktable.Datasource
				if json.Unmarshal(raw, &d) == nil && d.AccessConfig != nil {
					d.AccessConfig.Password = ""
					out.Items[i], _ = json.Marshal(d)
				}
			}
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

// get answers one object.
func (s *Server) get(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, _ caller) error {
		var v json.RawMessage
		if err := s.load(r.Context(), kind, r.PathValue("id"), &v); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	}
}

func (s *Server) me(w http.ResponseWriter, _ *http.Request, c caller) error {
	role := "admin"
	if c.token != nil {
		role = "asker"
	}
	writeJSON(w, http.StatusOK, asktable.Me{ProjectID: "shopmind-builtin", AKRole: role})
	return nil
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, _ caller) error {
	var in asktable.CreateToken
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.ChatRole.RoleID == "" {
		return httpErr{http.StatusUnprocessableEntity, "chat_role.role_id is required"}
	}
	if in.TokenTTL < 60 || in.TokenTTL > 86400 {
		return httpErr{http.StatusUnprocessableEntity, "token_ttl must be 60 to 86400 seconds"}
	}
	var role asktable.Role
	if err := s.load(r.Context(), "role", in.ChatRole.RoleID, &role); err != nil {
		return err
	}
	token := "tk_" + newID("asker")
	g := tokenGrant{RoleID: role.ID, Variables: in.ChatRole.RoleVariables, ExpiresAt: time.Now().Add(time.Duration(in.TokenTTL) * time.Second)}
	if err := s.put(r.Context(), "token", hashToken(token), "", g); err != nil {
		return err
	}
	if mrand.N(100) == 0 { // now and then, drop tokens expired for a day
		if _, err := s.o.Pool.Exec(r.Context(), `DELETE FROM nl2sql_provider.objects
			WHERE kind = 'token' AND (body->>'expires_at')::timestamptz < now() - interval '1 day'`); err != nil {
			s.o.Log.Warn("nl2sql provider: dropping expired tokens", "error", err)
		}
	}
	writeJSON(w, http.StatusOK, asktable.Token{Token: token})
	return nil
}

func (s *Server) createDatasource(w http.ResponseWriter, r *http.Request, _ caller) error {
	var in asktable.CreateDatasource
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Engine != "postgresql" && in.Engine != "clickhouse" {
		return httpErr{http.StatusUnprocessableEntity, "engine must be postgresql or clickhouse"}
	}
	if in.AccessConfig.Host == "" || in.AccessConfig.Port <= 0 {
		return httpErr{http.StatusUnprocessableEntity, "access_config.host and access_config.port are required"}
	}
	d := asktable.Datasource{ID: newID("ds"), Name: in.Name, Engine: in.Engine, MetaStatus: asktable.MetaUnprocessed,
		AccessConfig: &in.AccessConfig, CreatedAt: time.Now().UTC()}
	if err := s.put(r.Context(), "datasource", d.ID, d.Name, d); err != nil {
		return err
	}
	d.AccessConfig = &asktable.AccessConfig{Host: in.AccessConfig.Host, Port: in.AccessConfig.Port, User: in.AccessConfig.User, DB: in.AccessConfig.DB}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// updateDatasource changes a datasource's engine or connection; its metadata must then be
// built again (meta_status unprocessed).
func (s *Server) updateDatasource(w http.ResponseWriter, r *http.Request, _ caller) error {
	var d asktable.Datasource
	if err := s.load(r.Context(), "datasource", r.PathValue("id"), &d); err != nil {
		return err
	}
	var in asktable.CreateDatasource
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Engine != "" {
		if in.Engine != "postgresql" && in.Engine != "clickhouse" {
			return httpErr{http.StatusUnprocessableEntity, "engine must be postgresql or clickhouse"}
		}
		d.Engine = in.Engine
	}
	if in.AccessConfig.Host != "" || in.AccessConfig.Port > 0 {
		if in.AccessConfig.Host == "" || in.AccessConfig.Port <= 0 {
			return httpErr{http.StatusUnprocessableEntity, "access_config.host and access_config.port go together"}
		}
		if in.AccessConfig.Password == "" && d.AccessConfig != nil { // kept unless replaced
			in.AccessConfig.Password = d.AccessConfig.Password
		}
		d.AccessConfig = &in.AccessConfig
	}
	d.MetaStatus, d.MetaError, d.TableCount = asktable.MetaUnprocessed, "", 0
	if err := s.put(r.Context(), "datasource", d.ID, d.Name, d); err != nil {
		return err
	}
	d.AccessConfig.Password = ""
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) getDatasource(w http.ResponseWriter, r *http.Request, _ caller) error {
	var d asktable.Datasource
	if err := s.load(r.Context(), "datasource", r.PathValue("id"), &d); err != nil {
		return err
	}
	if d.AccessConfig != nil {
		d.AccessConfig.Password = ""
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// buildMeta marks the datasource processing and builds its metadata in the background: it
// checks the database answers at access_config's address, then describes the catalog's
// tables; an unreachable database makes meta_status failed with the reason.
func (s *Server) buildMeta(w http.ResponseWriter, r *http.Request, _ caller) error {
	var d asktable.Datasource
	if err := s.load(r.Context(), "datasource", r.PathValue("id"), &d); err != nil {
		return err
	}
	d.MetaStatus, d.MetaError = asktable.MetaProcessing, ""
	if err := s.put(r.Context(), "datasource", d.ID, d.Name, d); err != nil {
		return err
	}
	go s.metaJob(d)
	writeJSON(w, http.StatusOK, map[string]string{"status": "processing"})
	return nil
}

func (s *Server) metaJob(d asktable.Datasource) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.o.MetaDelay > 0 {
		time.Sleep(s.o.MetaDelay)
	}
	cat, err := s.catalog(ctx)
	if err != nil {
		d.MetaStatus, d.MetaError, d.TableCount = asktable.MetaFailed, err.Error(), 0
		if err := s.put(ctx, "datasource", d.ID, d.Name, d); err != nil {
			s.o.Log.Error("nl2sql provider: storing metadata status", "error", err)
		}
		return
	}
	d.MetaStatus, d.TableCount = asktable.MetaSuccess, len(cat.Tables)
	addr := net.JoinHostPort(d.AccessConfig.Host, strconv.Itoa(d.AccessConfig.Port))
	conn, err := (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		d.MetaStatus, d.MetaError, d.TableCount = asktable.MetaFailed, "cannot reach the database at "+addr+": "+err.Error(), 0
	} else {
		_ = conn.Close()
	}
	if err := s.put(ctx, "datasource", d.ID, d.Name, d); err != nil {
		s.o.Log.Error("nl2sql provider: storing metadata status", "error", err)
	}
}

// schemaOf is the schema (PostgreSQL) or database (ClickHouse) the datasource's tables are in.
func schemaOf(d asktable.Datasource) string {
	if d.Engine == "clickhouse" && d.AccessConfig != nil && d.AccessConfig.DB != "" {
		return d.AccessConfig.DB
	}
	return "analytics"
}

func (s *Server) getMeta(w http.ResponseWriter, r *http.Request, _ caller) error {
	var d asktable.Datasource
	if err := s.load(r.Context(), "datasource", r.PathValue("id"), &d); err != nil {
		return err
	}
	if d.MetaStatus != asktable.MetaSuccess {
		return httpErr{http.StatusConflict, "metadata not built (meta_status " + d.MetaStatus + ")"}
	}
	cat, err := s.catalog(r.Context())
	if err != nil {
		return err
	}
	schema := schemaOf(d)
	ms := asktable.MetaSchema{Name: schema, OriginDesc: "ShopMind analytical store", Tables: map[string]asktable.MetaTable{}}
	for _, t := range cat.Tables {
		mt := asktable.MetaTable{Name: t.Name, FullName: schema + "." + t.Name, OriginDesc: t.Description, Fields: map[string]asktable.MetaField{}}
		for _, c := range t.Columns {
			mt.Fields[c.Name] = asktable.MetaField{Name: c.Name, FullName: mt.FullName + "." + c.Name, DataType: string(c.Type), OriginDesc: c.Description}
		}
		ms.Tables[t.Name] = mt
	}
	writeJSON(w, http.StatusOK, asktable.Meta{DatasourceID: d.ID, Schemas: map[string]asktable.MetaSchema{schema: ms}})
	return nil
}

func (s *Server) createPolicy(w http.ResponseWriter, r *http.Request, _ caller) error {
	var in asktable.CreatePolicy
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Permission != "allow" && in.Permission != "deny" {
		return httpErr{http.StatusUnprocessableEntity, "permission must be allow or deny"}
	}
	if len(in.DatasetConfig.DatasourceIDs) == 0 {
		return httpErr{http.StatusUnprocessableEntity, "dataset_config.datasource_ids is required"}
	}
	for _, id := range in.DatasetConfig.DatasourceIDs {
		var d asktable.Datasource
		if err := s.load(r.Context(), "datasource", id, &d); err != nil {
			return err
		}
	}
	if rp := in.DatasetConfig.RegexPatterns; rp != nil && rp.TablesRegexPattern != "" {
		if _, err := regexp.Compile(rp.TablesRegexPattern); err != nil {
			return httpErr{http.StatusUnprocessableEntity, "tables_regex_pattern: " + err.Error()}
		}
	}
	cat, err := s.catalog(r.Context())
	if err != nil {
		return err
	}
	if err := checkPolicy(asktable.Policy{Permission: in.Permission, DatasetConfig: in.DatasetConfig}, cat); err != nil {
		return httpErr{http.StatusUnprocessableEntity, err.Error()}
	}
	p := asktable.Policy{ID: newID("policy"), Name: in.Name, Permission: in.Permission, DatasetConfig: in.DatasetConfig, CreatedAt: time.Now().UTC()}
	if err := s.put(r.Context(), "policy", p.ID, p.Name, p); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

func (s *Server) checkPolicies(ctx context.Context, ids []string) error {
	for _, id := range ids {
		var p asktable.Policy
		if err := s.load(ctx, "policy", id, &p); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) createRole(w http.ResponseWriter, r *http.Request, _ caller) error {
	var in asktable.CreateRole
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := s.checkPolicies(r.Context(), in.PolicyIDs); err != nil {
		return err
	}
	role := asktable.Role{ID: newID("role"), Name: in.Name, PolicyIDs: in.PolicyIDs, CreatedAt: time.Now().UTC()}
	if role.PolicyIDs == nil {
		role.PolicyIDs = []string{}
	}
	if err := s.put(r.Context(), "role", role.ID, role.Name, role); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, role)
	return nil
}

func (s *Server) updateRole(w http.ResponseWriter, r *http.Request, _ caller) error {
	var role asktable.Role
	if err := s.load(r.Context(), "role", r.PathValue("id"), &role); err != nil {
		return err
	}
	var in asktable.CreateRole
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := s.checkPolicies(r.Context(), in.PolicyIDs); err != nil {
		return err
	}
	if in.Name != "" {
		role.Name = in.Name
	}
	if in.PolicyIDs != nil {
		role.PolicyIDs = in.PolicyIDs
	}
	if err := s.put(r.Context(), "role", role.ID, role.Name, role); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, role)
	return nil
}

func (s *Server) createBot(w http.ResponseWriter, r *http.Request, _ caller) error {
	var in asktable.CreateBot
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Name == "" || len(in.DatasourceIDs) == 0 {
		return httpErr{http.StatusUnprocessableEntity, "name and datasource_ids are required"}
	}
	for _, id := range in.DatasourceIDs {
		var d asktable.Datasource
		if err := s.load(r.Context(), "datasource", id, &d); err != nil {
			return err
		}
	}
	b := asktable.Bot{ID: newID("bot"), Name: in.Name, DatasourceIDs: in.DatasourceIDs, CreatedAt: time.Now().UTC()}
	if err := s.put(r.Context(), "bot", b.ID, b.Name, b); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

func (s *Server) createChat(w http.ResponseWriter, r *http.Request, c caller) error {
	var in asktable.CreateChat
	if err := decode(r, &in); err != nil {
		return err
	}
	if c.token != nil { // a token's chats play its role with its variables, whatever is asked
		in.RoleID, in.RoleVariables = c.token.RoleID, c.token.Variables
	}
	var b asktable.Bot
	if err := s.load(r.Context(), "bot", in.BotID, &b); err != nil {
		return err
	}
	if in.RoleID != "" {
		var role asktable.Role
		if err := s.load(r.Context(), "role", in.RoleID, &role); err != nil {
			return err
		}
	}
	ch := asktable.Chat{ID: newID("chat"), BotID: b.ID, Name: in.Name, RoleID: in.RoleID, RoleVariables: in.RoleVariables,
		Status: "active", CreatedAt: time.Now().UTC()}
	if err := s.put(r.Context(), "chat", ch.ID, ch.Name, ch); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ch)
	return nil
}

// chatFor loads a chat the caller may use: any with the API key; with a token, only chats
// playing the token's role with its variables.
func (s *Server) chatFor(ctx context.Context, id string, c caller) (asktable.Chat, error) {
	var ch asktable.Chat
	if err := s.load(ctx, "chat", id, &ch); err != nil {
		return ch, err
	}
	if c.token != nil && (ch.RoleID != c.token.RoleID || !maps.Equal(ch.RoleVariables, c.token.Variables)) {
		return ch, httpErr{http.StatusNotFound, "chat " + id + " not found"}
	}
	var n int
	if err := s.o.Pool.QueryRow(ctx, `SELECT count(*) FROM nl2sql_provider.objects WHERE kind = 'message' AND name = $1 AND body->>'role' = 'human'`, id).Scan(&n); err != nil {
		return ch, err
	}
	ch.MessageCount = n // questions asked
	return ch, nil
}

func (s *Server) getChat(w http.ResponseWriter, r *http.Request, c caller) error {
	ch, err := s.chatFor(r.Context(), r.PathValue("id"), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ch)
	return nil
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request, c caller) error {
	if _, err := s.chatFor(r.Context(), r.PathValue("id"), c); err != nil {
		return err
	}
	rows, err := s.o.Pool.Query(r.Context(), `SELECT body FROM nl2sql_provider.objects WHERE kind = 'message' AND name = $1 ORDER BY created_at, id LIMIT 100`, r.PathValue("id"))
	if err != nil {
		return err
	}
	msgs, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, asktable.Page[json.RawMessage]{Items: append([]json.RawMessage{}, msgs...), Total: len(msgs), Page: 1, Size: 100})
	return nil
}

// ask answers a question in a chat: the chat's role gives the tenant and row filters (it
// must restrict the tenant: no tenant, no answer), the writer the SQL, the executor the rows.
func (s *Server) ask(w http.ResponseWriter, r *http.Request, c caller) error {
	ch, err := s.chatFor(r.Context(), r.PathValue("id"), c)
	if err != nil {
		return err
	}
	var in asktable.CreateMessage
	if err := decode(r, &in); err != nil {
		return err
	}
	in.Question = strings.TrimSpace(in.Question)
	if in.Question == "" || len(in.Question) > 2000 {
		return httpErr{http.StatusUnprocessableEntity, "question must be 1 to 2000 characters"}
	}
	var bot asktable.Bot
	if err := s.load(r.Context(), "bot", ch.BotID, &bot); err != nil {
		return err
	}
	if len(bot.DatasourceIDs) == 0 {
		return httpErr{http.StatusUnprocessableEntity, "the chat's bot has no datasource"}
	}
	var ds asktable.Datasource
	if err := s.load(r.Context(), "datasource", bot.DatasourceIDs[0], &ds); err != nil {
		return err
	}
	cat, err := s.catalog(r.Context())
	if err != nil {
		return err
	}
	scope, err := s.scope(r.Context(), ch, ds.ID, cat)
	if err != nil {
		return err
	}
	if s.o.Exec == nil {
		return httpErr{http.StatusServiceUnavailable, fmt.Sprintf("the SQL sandbox is unavailable, so questions cannot run: %v", s.o.ExecErr)}
	}
	sql, explanation, err := s.o.Writer.WriteSQL(r.Context(), in.Question, s.o.Exec.Dialect(), cat)
	if err != nil {
		return httpErr{http.StatusUnprocessableEntity, err.Error()}
	}
	res, err := s.o.Exec.Run(r.Context(), scope, sql, s.o.MaxRows)
	if err != nil {
		env := apperr.FromError(err) // the sandbox's answer: 400 refused, 422 cap, 504 time
		if env.Code == http.StatusInternalServerError {
			return err
		}
		return httpErr{env.Code, "the query could not run: " + env.Message}
	}
	now := time.Now().UTC()
	q := asktable.Message{ID: newID("msg"), ChatID: ch.ID, Role: "human", Content: asktable.MessageContent{Text: in.Question}, CreatedAt: now}
	a := asktable.Message{ID: newID("msg"), ChatID: ch.ID, Role: "ai", CreatedAt: now.Add(time.Microsecond),
		Content: asktable.MessageContent{Text: fmt.Sprintf("%s (%d rows)", explanation, len(res.Rows)), SQL: res.SQL, Columns: res.Columns, Rows: res.Rows, Truncated: res.Truncated}}
	if a.Content.Rows == nil {
		a.Content.Rows = [][]any{}
	}
	if err := s.put(r.Context(), "message", q.ID, ch.ID, q); err != nil {
		return err
	}
	if err := s.put(r.Context(), "message", a.ID, ch.ID, a); err != nil {
		return err
	}
	if ch.Name == "" {
		ch.Name = in.Question
		ch.MessageCount = 0
		if err := s.put(r.Context(), "chat", ch.ID, ch.Name, ch); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// scope is the tenant and row filters a chat's role sets on a datasource, its variables
// substituted. A chat whose role does not pin the tenant gets no answer.
func (s *Server) scope(ctx context.Context, ch asktable.Chat, dsID string, cat *catalog.Catalog) (Scope, error) {
	if ch.RoleID == "" {
		return Scope{}, httpErr{http.StatusForbidden, "the chat plays no role: the built-in provider answers only chats whose role restricts the tenant"}
	}
	var role asktable.Role
	if err := s.load(ctx, "role", ch.RoleID, &role); err != nil {
		return Scope{}, err
	}
	policies := make([]asktable.Policy, 0, len(role.PolicyIDs))
	for _, pid := range role.PolicyIDs {
		var p asktable.Policy
		if err := s.load(ctx, "policy", pid, &p); err != nil {
			return Scope{}, err
		}
		policies = append(policies, p)
	}
	return policyScope(policies, dsID, ch.RoleVariables, cat) // policy.go
}

// Migrations are the provider's schema migrations (migrations/*.sql).
//
//go:embed migrations/*.sql
var Migrations embed.FS
