// The four tools over the analysis service: search_indicators, get_database_info,
// env_perception and query_metrics.

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/services/chat/agent/period"
)

// Tool names of this package.
const (
	ToolSearchIndicators = "search_indicators"
	ToolGetDatabaseInfo  = "get_database_info"
	ToolEnvPerception    = "env_perception"
	ToolQueryMetrics     = "query_metrics"
)

// Tools returns the agents' tools over the analysis service: search_indicators,
// get_database_info, env_perception and query_metrics. now is the clock (UTC periods).
func Tools(analytics Analytics, index *MetricIndex, now func() time.Time) []Tool {
	if now == nil {
		now = time.Now
	}
	return []Tool{
		&searchIndicators{analytics: analytics, index: index},
		&getDatabaseInfo{analytics: analytics},
		&envPerception{},
		&queryMetrics{analytics: analytics, now: now},
	}
}

// --- search_indicators ---------------------------------------------------------------

type searchIndicators struct {
	analytics Analytics
	index     *MetricIndex
}

func (t *searchIndicators) Name() string { return ToolSearchIndicators }
func (t *searchIndicators) Description() string {
	return "Find the business indicators (metrics) that match words of the question, by vector search over the " +
		"tenant's metric names, display names, synonyms and descriptions. Returns the best matches with their " +
		"machine name (use it in query_metrics), display name, description, group, type and synonyms."
}
func (t *searchIndicators) Parameters() *Schema {
	return Object(map[string]*Schema{
		"query": {Type: "string", Description: "words naming the indicator, for example 销售额, orders, average order value", MaxLength: ptr(500)},
		"top_k": {Type: "integer", Description: "how many indicators to return (default 5)", Minimum: ptr(1.0), Maximum: ptr(20.0), Default: 5},
	}, "query")
}

// IndicatorHit is one result of search_indicators.
type IndicatorHit struct {
	Name        string   `json:"name"`
	DisplayName string   `json:"display_name"`
	Description string   `json:"description,omitempty"`
	Group       string   `json:"group,omitempty"`
	Type        string   `json:"type,omitempty"`
	Synonyms    []string `json:"synonyms,omitempty"`
	Grain       string   `json:"grain,omitempty"`
	Score       float64  `json:"score"`
	Matched     string   `json:"matched,omitempty"`
}

func (t *searchIndicators) Call(ctx context.Context, env *ToolEnv, raw json.RawMessage) (*ToolResult, error) {
	var args struct {
		Query string `json:"query"`
		TopK  int    `json:"top_k"`
	}
	req, err := DecodeCall(env, raw, &args)
	if err != nil {
		return nil, err
	}
	tenant := req.Identity.TenantID
	if strings.TrimSpace(args.Query) == "" {
		return nil, errors.New("query is empty")
	}
	metrics, err := FetchMetrics(ctx, t.analytics)
	if err != nil {
		return nil, err
	}
	hits, err := t.index.Search(ctx, tenant, metrics, args.Query, args.TopK)
	if err != nil {
		return nil, err
	}
	out := make([]IndicatorHit, len(hits))
	names := make([]string, len(hits))
	for i, h := range hits {
		m := h.Metric
		out[i] = IndicatorHit{Name: m.Name, DisplayName: m.DisplayName, Description: m.Description, Group: m.Group, Type: m.Type,
			Synonyms: m.Synonyms, Grain: string(m.Grain), Score: float64(int(h.Score*1000)) / 1000, Matched: h.Matched}
		names[i] = m.Name
	}
	return &ToolResult{JSON: map[string]any{"indicators": out}, Data: hits,
		Summary: fmt.Sprintf("%d indicators: %s", len(out), strings.Join(names, ", "))}, nil
}

// --- get_database_info --------------------------------------------------------------

type getDatabaseInfo struct{ analytics Analytics }

func (t *getDatabaseInfo) Name() string { return ToolGetDatabaseInfo }
func (t *getDatabaseInfo) Description() string {
	return "Describe the analytical database: its tables, columns (type and role: time, dimension or measure), the " +
		"named dimensions (shop, goods, category, ...) and the SQL rules. Call it before writing SQL or when " +
		"unsure which dimensions exist."
}
func (t *getDatabaseInfo) Parameters() *Schema { return Object(nil) }

// SQLRules are the rules of SQL on the analytical database that get_database_info states.
var SQLRules = []string{
	"SELECT statements only: no INSERT, UPDATE, DELETE, DDL, or several statements.",
	"Tenant filter: every table has the column i_tenant_id; every query must filter each table it reads on the caller's tenant (the service adds and enforces it).",
	"Limits: at most 10000 rows are returned (100 by default); queries time out.",
	"Time columns are UTC timestamps; ranges are [start, end).",
	"Prefer query_metrics for metric questions: it computes the tenant's metric definitions correctly (for example gmv counts paid, shipped and completed orders only).",
	"Order-level amounts (gmv) cannot be split by goods or category: use the order-line metric line_amount for sales by goods or category.",
}

func (t *getDatabaseInfo) Call(ctx context.Context, env *ToolEnv, _ json.RawMessage) (*ToolResult, error) {
	if _, err := env.Caller(); err != nil {
		return nil, err
	}
	cat, err := t.analytics.GetCatalog(ctx, &analysisv1.GetCatalogRequest{})
	if err != nil {
		return nil, err
	}
	type column struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Role        string `json:"role"`
		Description string `json:"description,omitempty"`
	}
	type table struct {
		Name        string   `json:"name"`
		Description string   `json:"description,omitempty"`
		TimeColumn  string   `json:"time_column,omitempty"`
		Columns     []column `json:"columns"`
	}
	type dimension struct {
		Name    string   `json:"name"`
		Columns []string `json:"columns"`
	}
	var tables []table
	for _, tb := range cat.GetTables() {
		tt := table{Name: tb.GetName(), Description: tb.GetDescription(), TimeColumn: tb.GetDefaultTimeColumn()}
		for _, c := range tb.GetColumns() {
			tt.Columns = append(tt.Columns, column{Name: c.GetName(), Type: c.GetType(), Role: c.GetRole(), Description: c.GetDescription()})
		}
		tables = append(tables, tt)
	}
	var dims []dimension
	var dimNames []string
	for _, d := range cat.GetDimensions() {
		dims = append(dims, dimension{Name: d.GetName(), Columns: d.GetColumns()})
		dimNames = append(dimNames, d.GetName())
	}
	return &ToolResult{JSON: map[string]any{
		"tables": tables, "dimensions": dims, "sql_rules": SQLRules,
		"granularities": []string{"day", "week", "month"}, "time_zone": "UTC",
	}, Data: cat, Summary: fmt.Sprintf("%d tables; dimensions %s", len(tables), strings.Join(dimNames, ", "))}, nil
}

// --- env_perception -----------------------------------------------------------------

type envPerception struct{}

func (t *envPerception) Name() string { return ToolEnvPerception }
func (t *envPerception) Description() string {
	return "Summarise what the user is looking at: the current page (route, title), its filters, selected shop, " +
		"date range and visible metrics, from current_page_info. Without arguments it reads the page info the " +
		"client sent with the message."
}
func (t *envPerception) Parameters() *Schema {
	return Object(map[string]*Schema{
		"current_page_info": {Type: "object", Description: "page description; omit to use the one sent with the message"},
	})
}

// pageKeys are the page-info keys summarised first, in order, with their labels.
var pageKeys = []struct{ key, label string }{
	{"title", "page"}, {"page", "page"}, {"page_name", "page"}, {"route", "route"}, {"path", "route"}, {"url", "url"},
	{"shop", "shop"}, {"shop_name", "shop"}, {"shop_id", "shop id"}, {"selected_shop", "shop"},
	{"date_range", "date range"}, {"start_date", "from"}, {"end_date", "to"}, {"start_time", "from"}, {"end_time", "to"},
	{"filters", "filters"}, {"metrics", "visible metrics"}, {"visible_metrics", "visible metrics"}, {"dimensions", "dimensions"},
	{"selected", "selection"}, {"selection", "selection"},
}

func (t *envPerception) Call(_ context.Context, env *ToolEnv, raw json.RawMessage) (*ToolResult, error) {
	var args struct {
		CurrentPageInfo map[string]any `json:"current_page_info"`
	}
	_ = json.Unmarshal(raw, &args)
	info := args.CurrentPageInfo
	if info == nil && env != nil && env.Request != nil && env.Request.CurrentPageInfo != nil {
		info = env.Request.CurrentPageInfo.AsMap()
	}
	var lines []string
	if env != nil && env.Request != nil && env.Request.CurrentUser != nil {
		u := env.Request.CurrentUser
		if u.GetUsername() != "" {
			lines = append(lines, "user: "+u.GetUsername())
		}
	}
	if len(info) == 0 {
		lines = append(lines, "No page information was sent: the user is in the chat without page context.")
		text := strings.Join(lines, "\n")
		return &ToolResult{Text: text, Summary: "no page information"}, nil
	}
	used := map[string]bool{}
	for _, pk := range pageKeys {
		v, ok := info[pk.key]
		if !ok || used[pk.key] {
			continue
		}
		used[pk.key] = true
		lines = append(lines, pk.label+": "+compact(v, 300))
	}
	var rest []string
	for k := range info {
		if !used[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for i, k := range rest {
		if i >= 20 {
			lines = append(lines, fmt.Sprintf("(%d more fields)", len(rest)-i))
			break
		}
		lines = append(lines, k+": "+compact(info[k], 200))
	}
	text := "The user is looking at:\n- " + strings.Join(lines, "\n- ")
	return &ToolResult{Text: text, Summary: fmt.Sprintf("%d page fields", len(info))}, nil
}

// compact writes a JSON value briefly.
func compact(v any, max int) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	default:
		b, _ := json.Marshal(x)
		s = string(b)
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// --- query_metrics ------------------------------------------------------------------

type queryMetrics struct {
	analytics Analytics
	now       func() time.Time
}

func (t *queryMetrics) Name() string { return ToolQueryMetrics }
func (t *queryMetrics) Description() string {
	return "Compute metrics through the semantic layer (the analysis service's preview, with the user's permissions): " +
		"metric names (from search_indicators), optional dimensions (shop, goods, category, staff, platform, status), " +
		"optional time granularity (day, week, month), a period (start_date/end_date, inclusive, UTC; or a period " +
		"phrase such as 'last 7 days', 'last month', '上个月'; default the last 30 days) and top_n (the leaders by the " +
		"first metric). Returns columns and rows. For sales by goods or category use line_amount, not gmv."
}
func (t *queryMetrics) Parameters() *Schema {
	str := func(d string) *Schema { return &Schema{Type: "string", Description: d, MaxLength: ptr(64)} }
	return Object(map[string]*Schema{
		"metrics":     {Type: "array", Items: str("metric name"), MinItems: ptr(1), MaxItems: ptr(10), Description: "metric names, for example [\"gmv\"]"},
		"dimensions":  {Type: "array", Items: str("dimension"), MaxItems: ptr(3), Description: "group-by dimensions, for example [\"shop\"]"},
		"granularity": {Type: "string", Enum: []any{"", "day", "week", "month"}, Description: "time bucket of a time series"},
		"start_date":  {Type: "string", Description: "first day, YYYY-MM-DD (UTC)", MaxLength: ptr(40)},
		"end_date":    {Type: "string", Description: "last day, YYYY-MM-DD (inclusive, UTC)", MaxLength: ptr(40)},
		"period":      {Type: "string", Description: "instead of dates: a period phrase (last 7 days, this month, last month, 2026-10, 上个月, 最近30天)", MaxLength: ptr(100)},
		"top_n":       {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(1000.0), Description: "only the N leaders by the first metric"},
		"filters": {Type: "array", MaxItems: ptr(10), Description: "conditions joined with AND",
			Items: Object(map[string]*Schema{
				"field":    str("column or dimension"),
				"operator": {Type: "string", Enum: []any{"eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in", "like"}},
				"value":    {Description: "a string, number or boolean; a list for in/not_in"},
			}, "field", "operator", "value")},
	}, "metrics")
}

// QueryArgs are query_metrics' arguments.
type QueryArgs struct {
	Metrics     []string      `json:"metrics"`
	Dimensions  []string      `json:"dimensions,omitempty"`
	Granularity string        `json:"granularity,omitempty"`
	StartDate   string        `json:"start_date,omitempty"`
	EndDate     string        `json:"end_date,omitempty"`
	Period      string        `json:"period,omitempty"`
	TopN        int           `json:"top_n,omitempty"`
	Filters     []QueryFilter `json:"filters,omitempty"`
}

// QueryFilter is one condition of query_metrics.
type QueryFilter struct {
	Field    string `json:"field"`
	Operator string `json:"operator"`
	Value    any    `json:"value"`
}

// QueryOutcome is query_metrics' in-process result.
type QueryOutcome struct {
	Args     QueryArgs
	Period   period.Period
	Request  *analysisv1.PreviewQueryRequest
	Response *analysisv1.PreviewQueryResponse
}

func parseDay(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return period.Day(t), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
}

// resolvePeriod reads the period of query_metrics' arguments.
func resolvePeriod(a QueryArgs, now time.Time) (period.Period, error) {
	today := period.Day(now)
	switch {
	case a.StartDate != "" || a.EndDate != "":
		end := today.AddDate(0, 0, -1)
		if a.EndDate != "" {
			e, err := parseDay(a.EndDate)
			if err != nil {
				return period.Period{}, fmt.Errorf("end_date: %w", err)
			}
			end = e
		}
		start := end.AddDate(0, 0, -(period.DefaultDays - 1))
		if a.StartDate != "" {
			s, err := parseDay(a.StartDate)
			if err != nil {
				return period.Period{}, fmt.Errorf("start_date: %w", err)
			}
			start = s
		}
		if end.Before(start) {
			return period.Period{}, errors.New("end_date is before start_date")
		}
		return period.Period{Start: start, End: end.AddDate(0, 0, 1), Kind: "range"}, nil
	case a.Period != "":
		p, _, ok := period.Parse(NormalizeText(a.Period), now)
		if !ok {
			return period.Period{}, fmt.Errorf("period %q is not understood; give start_date and end_date", a.Period)
		}
		return p, nil
	}
	return period.DaysBefore(today, period.DefaultDays), nil
}

// BuildPreview turns query_metrics' arguments into the analysis preview request.
func BuildPreview(a QueryArgs, p period.Period) (*analysisv1.PreviewQueryRequest, error) {
	req := &analysisv1.PreviewQueryRequest{
		MetricNames: a.Metrics, Dimensions: a.Dimensions, TimeGranularity: a.Granularity,
		StartTime: timestamppb.New(p.Start), EndTime: timestamppb.New(p.End),
	}
	limit := int32(100)
	switch {
	case a.TopN > 0:
		limit = int32(a.TopN)
	case a.Granularity != "":
		limit = 1000
	}
	if a.Granularity != "" && len(a.Dimensions) > 0 && a.TopN > 0 {
		limit = 1000 // a series per dimension value: top_n cannot cut rows
	}
	req.Limit = &limit
	if len(a.Metrics) > 0 {
		switch {
		case a.Granularity != "":
			req.Sort = []*analysisv1.QuerySort{{Field: "time", Order: "asc"}}
		case len(a.Dimensions) > 0 || a.TopN > 0:
			req.Sort = []*analysisv1.QuerySort{{Field: a.Metrics[0], Order: "desc"}}
		}
	}
	for _, f := range a.Filters {
		v, err := structpb.NewValue(f.Value)
		if err != nil {
			return nil, fmt.Errorf("filter %s: %w", f.Field, err)
		}
		req.Filters = append(req.Filters, &analysisv1.Condition{Field: f.Field, Operator: f.Operator, Value: v})
	}
	return req, nil
}

func (t *queryMetrics) Call(ctx context.Context, env *ToolEnv, raw json.RawMessage) (*ToolResult, error) {
	var a QueryArgs
	if _, err := DecodeCall(env, raw, &a); err != nil {
		return nil, err
	}
	for i := range a.Metrics {
		a.Metrics[i] = strings.TrimSpace(strings.ToLower(a.Metrics[i]))
	}
	p, err := resolvePeriod(a, t.now())
	if err != nil {
		return nil, err
	}
	req, err := BuildPreview(a, p)
	if err != nil {
		return nil, err
	}
	resp, err := t.analytics.PreviewQuery(ctx, req)
	if err != nil {
		return nil, err
	}
	cols := make([]map[string]string, len(resp.GetColumns()))
	for i, c := range resp.GetColumns() {
		cols[i] = map[string]string{"name": c.GetName(), "type": c.GetType(), "role": c.GetRole()}
	}
	rows := make([]any, len(resp.GetRows()))
	for i, r := range resp.GetRows() {
		rows[i] = r.AsSlice()
	}
	out := map[string]any{
		"metrics": a.Metrics, "dimensions": a.Dimensions, "granularity": a.Granularity,
		"period":  map[string]string{"start_date": p.Start.Format(time.DateOnly), "end_date": p.LastDay().Format(time.DateOnly)},
		"columns": cols, "rows": rows, "row_count": len(rows), "truncated": resp.GetTruncated(),
	}
	return &ToolResult{JSON: out, Data: &QueryOutcome{Args: a, Period: p, Request: req, Response: resp},
		Summary: fmt.Sprintf("%d rows, %s", len(rows), p.Range())}, nil
}
