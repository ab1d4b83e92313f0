// Package asktable speaks the /v1 HTTP API of an AskTable-style natural-language-to-SQL
// provider: its wire types (this file), a client with bearer API key, per-attempt timeouts,
// retries with backoff and errors mapped to ShopMind's error kinds (client.go), and the
// re-runnable provisioning of datasource, metadata, policy, role and bot (setup.go).
//
// The shapes follow AskTable's public API as its Python SDK (DataMini/asktable-python,
// api.md and types/) documents them; the built-in provider (services/nl2sql/provider)
// serves the same shapes. Fields this package does not use are ignored on decode.
package asktable

import "time"

// Meta statuses of a datasource.
const (
	MetaUnprocessed = "unprocessed"
	MetaProcessing  = "processing"
	MetaSuccess     = "success"
	MetaFailed      = "failed"
)

// Page is one page of a list endpoint (AskTable's SyncPage).
type Page[T any] struct {
	Items []T `json:"items"`
	Total int `json:"total"`
	Page  int `json:"page"`
	Size  int `json:"size"`
}

// AccessConfig is how the provider reaches the datasource.
type AccessConfig struct {
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	DB       string `json:"db,omitempty"`
}

// Datasource is a provider datasource.
type Datasource struct {
	ID           string        `json:"id"`
	Name         string        `json:"name"`
	Engine       string        `json:"engine"`
	MetaStatus   string        `json:"meta_status"`
	MetaError    string        `json:"meta_error,omitempty"`
	TableCount   int           `json:"table_count,omitempty"`
	AccessConfig *AccessConfig `json:"access_config,omitempty"`
	CreatedAt    time.Time     `json:"created_at"`
}

// CreateDatasource is the body of POST /v1/datasources.
type CreateDatasource struct {
	Engine       string       `json:"engine"`
	Name         string       `json:"name"`
	AccessConfig AccessConfig `json:"access_config"`
}

// Meta is a datasource's metadata: schemas, their tables and fields.
type Meta struct {
	DatasourceID string                `json:"datasource_id"`
	Schemas      map[string]MetaSchema `json:"schemas"`
}

// MetaSchema is one schema of the metadata.
type MetaSchema struct {
	Name       string               `json:"name"`
	OriginDesc string               `json:"origin_desc"`
	Tables     map[string]MetaTable `json:"tables"`
}

// MetaTable is one table of the metadata.
type MetaTable struct {
	Name       string               `json:"name"`
	FullName   string               `json:"full_name"`
	OriginDesc string               `json:"origin_desc"`
	Fields     map[string]MetaField `json:"fields"`
}

// MetaField is one column of the metadata.
type MetaField struct {
	Name       string `json:"name"`
	FullName   string `json:"full_name"`
	DataType   string `json:"data_type,omitempty"`
	OriginDesc string `json:"origin_desc"`
}

// RegexPatterns select the schemas, tables and fields a policy covers (empty: all).
type RegexPatterns struct {
	SchemasRegexPattern string `json:"schemas_regex_pattern,omitempty"`
	TablesRegexPattern  string `json:"tables_regex_pattern,omitempty"`
	FieldsRegexPattern  string `json:"fields_regex_pattern,omitempty"`
}

// DatasetConfig is what a policy covers: datasources, name patterns and row filters
// (per datasource id, expressions "<schema>.<table>.<field> IN {{ variable }}").
type DatasetConfig struct {
	DatasourceIDs []string            `json:"datasource_ids"`
	RegexPatterns *RegexPatterns      `json:"regex_patterns,omitempty"`
	RowsFilters   map[string][]string `json:"rows_filters,omitempty"`
}

// Policy is an access policy.
type Policy struct {
	ID            string        `json:"id"`
	Name          string        `json:"name"`
	Permission    string        `json:"permission"`
	DatasetConfig DatasetConfig `json:"dataset_config"`
	CreatedAt     time.Time     `json:"created_at"`
}

// CreatePolicy is the body of POST /v1/policies.
type CreatePolicy struct {
	Name          string        `json:"name"`
	Permission    string        `json:"permission"`
	DatasetConfig DatasetConfig `json:"dataset_config"`
}

// Role is a set of policies a chat or token plays.
type Role struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	PolicyIDs []string  `json:"policy_ids"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateRole is the body of POST /v1/roles (and PATCH /v1/roles/{id}).
type CreateRole struct {
	Name      string   `json:"name,omitempty"`
	PolicyIDs []string `json:"policy_ids"`
}

// Bot is an assistant over datasources.
type Bot struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	DatasourceIDs []string  `json:"datasource_ids"`
	CreatedAt     time.Time `json:"created_at"`
}

// CreateBot is the body of POST /v1/bots.
type CreateBot struct {
	Name          string   `json:"name"`
	DatasourceIDs []string `json:"datasource_ids"`
	MaxRows       int      `json:"max_rows,omitempty"`
}

// ChatRole is the role a token's chats play, with its variables.
type ChatRole struct {
	RoleID        string            `json:"role_id"`
	RoleVariables map[string]string `json:"role_variables,omitempty"`
}

// CreateToken is the body of POST /v1/auth/tokens: a temporary token (ak_role "asker")
// whose chats play chat_role, valid token_ttl seconds.
type CreateToken struct {
	AKRole      string            `json:"ak_role"`
	ChatRole    ChatRole          `json:"chat_role"`
	TokenTTL    int               `json:"token_ttl"`
	UserProfile map[string]string `json:"user_profile,omitempty"`
}

// Token is the answer of POST /v1/auth/tokens. AskTable documents the answer as an object
// holding the token; this package reads "token" (or "access_token").
type Token struct {
	Token       string `json:"token"`
	AccessToken string `json:"access_token,omitempty"`
}

// Value is the token string, whichever field held it.
func (t Token) Value() string {
	if t.Token != "" {
		return t.Token
	}
	return t.AccessToken
}

// Me is the answer of GET /v1/auth/me (the key's identity), used as the health check.
type Me struct {
	ProjectID string `json:"project_id"`
	AKRole    string `json:"ak_role,omitempty"`
}

// Chat is a provider chat.
type Chat struct {
	ID            string            `json:"id"`
	BotID         string            `json:"bot_id"`
	Name          string            `json:"name"`
	RoleID        string            `json:"role_id,omitempty"`
	RoleVariables map[string]string `json:"role_variables,omitempty"`
	Status        string            `json:"status,omitempty"`
	MessageCount  int               `json:"message_count,omitempty"`
	CreatedAt     time.Time         `json:"created_at"`
}

// CreateChat is the body of POST /v1/chats.
type CreateChat struct {
	BotID         string            `json:"bot_id"`
	Name          string            `json:"name,omitempty"`
	RoleID        string            `json:"role_id,omitempty"`
	RoleVariables map[string]string `json:"role_variables,omitempty"`
}

// CreateMessage is the body of POST /v1/chats/{id}/messages.
type CreateMessage struct {
	Question string `json:"question"`
}

// Message is a chat message; an answer carries its text, the SQL run and the rows.
type Message struct {
	ID        string         `json:"id"`
	ChatID    string         `json:"chat_id"`
	Role      string         `json:"role"`
	Content   MessageContent `json:"content"`
	CreatedAt time.Time      `json:"created_at"`
}

// MessageContent is what a message says.
type MessageContent struct {
	Text      string   `json:"text"`
	SQL       string   `json:"sql,omitempty"`
	Columns   []string `json:"columns,omitempty"`
	Rows      [][]any  `json:"rows,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

// ErrorBody is the provider's error answer ({"detail": ...} or {"message": ...}).
type ErrorBody struct {
	Detail  any    `json:"detail,omitempty"`
	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`
}
