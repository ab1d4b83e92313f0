// The agent tools create_promotion_plan and promotion_strategy.

package promotion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// Tool names.
const (
	ToolCreatePlan = "create_promotion_plan"
	ToolStrategy   = "promotion_strategy"
)

// Goods reads one goods of the caller's tenant (basic's GoodsService.GetGoods).
type Goods interface {
	GetGoods(ctx context.Context, req *basicv1.GetGoodsRequest) (*basicv1.GetGoodsResponse, error)
}

// GRPCGoods calls GoodsService.GetGoods as the caller (agent.CallAs).
type GRPCGoods struct {
	client  basicv1.GoodsServiceClient
	timeout time.Duration
}

// NewGRPCGoods wraps a connection to the basic target.
func NewGRPCGoods(conn grpc.ClientConnInterface, timeout time.Duration) *GRPCGoods {
	return &GRPCGoods{client: basicv1.NewGoodsServiceClient(conn), timeout: timeout}
}

// GetGoods implements Goods.
func (g *GRPCGoods) GetGoods(ctx context.Context, req *basicv1.GetGoodsRequest) (*basicv1.GetGoodsResponse, error) {
	return agent.CallAs(ctx, g.timeout, g.client.GetGoods, req)
}

// Tools returns create_promotion_plan and promotion_strategy over the store; goods checks
// product ids; now is the clock (nil: time.Now).
func Tools(store *Store, goods Goods, now func() time.Time) []agent.Tool {
	if now == nil {
		now = time.Now
	}
	return []agent.Tool{&createPlan{store: store, goods: goods, now: now}, &strategy{store: store}}
}

func ptr[T any](v T) *T { return &v }

func parseDay(field, s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %q is not a date (YYYY-MM-DD)", field, s)
	}
	return t, nil
}

// span reads a start and end date (defaults: from, and from + days - 1), checking the order
// and a length of at most a year.
func span(start, end string, from time.Time, days int) (time.Time, time.Time, error) {
	s, e := from, from.AddDate(0, 0, days-1)
	var err error
	if start != "" {
		if s, err = parseDay("start_date", start); err != nil {
			return s, e, err
		}
		e = s.AddDate(0, 0, days-1)
	}
	if end != "" {
		if e, err = parseDay("end_date", end); err != nil {
			return s, e, err
		}
	}
	switch {
	case e.Before(s):
		return s, e, errors.New("end_date is before start_date")
	case e.Sub(s) > 366*24*time.Hour:
		return s, e, errors.New("a promotion lasts at most a year")
	}
	return s, e, nil
}

// --- create_promotion_plan ------------------------------------------------------------

type createPlan struct {
	store *Store
	goods Goods
	now   func() time.Time
}

func (t *createPlan) Name() string { return ToolCreatePlan }
func (t *createPlan) Description() string {
	return "Create a promotion plan template for a goods of the tenant from an analysis: the goal, the target goods, the " +
		"discount mechanics, the budget, the period and the metrics to watch. product_id must be one of the tenant's goods " +
		"(find it with search_entities). The plan is stored as a draft the merchant reviews; returns its template_id for " +
		"promotion_strategy."
}
func (t *createPlan) Parameters() *agent.Schema {
	str := func(d string, n int) *agent.Schema {
		return &agent.Schema{Type: "string", Description: d, MaxLength: ptr(n)}
	}
	return agent.Object(map[string]*agent.Schema{
		"analysis_result": str("the analysis the plan comes from (the numbers and the reasoning)", 20000),
		"product_id":      {Type: "integer", Description: "id of the target goods", Minimum: ptr(1.0)},
		"title":           str("short title (default: Promotion: <goods name>)", 120),
		"goal":            str("what the promotion is for", 500),
		"mechanics":       str("discount mechanics in words, for example \"20% off\", \"buy 2 get 1\"", 200),
		"discount_rate":   {Type: "number", Description: "discount rate from 0 to 1 (0.2: 20% off)", Minimum: ptr(0.0), Maximum: ptr(1.0)},
		"budget":          {Type: "number", Description: "budget in the shop's currency", Minimum: ptr(0.0), Maximum: ptr(1e12)},
		"start_date":      str("first day, YYYY-MM-DD (default tomorrow, UTC)", 10),
		"end_date":        str("last day, YYYY-MM-DD (default 14 days from the start)", 10),
		"metrics":         {Type: "array", Items: str("metric name", 64), MaxItems: ptr(10), Description: "the metrics to watch (default units_sold, line_amount)"},
	}, "analysis_result", "product_id")
}

func (t *createPlan) Call(ctx context.Context, env *agent.ToolEnv, raw json.RawMessage) (*agent.ToolResult, error) {
	var a struct {
		AnalysisResult string   `json:"analysis_result"`
		ProductID      int64    `json:"product_id"`
		Title          string   `json:"title"`
		Goal           string   `json:"goal"`
		Mechanics      string   `json:"mechanics"`
		DiscountRate   float64  `json:"discount_rate"`
		Budget         float64  `json:"budget"`
		StartDate      string   `json:"start_date"`
		EndDate        string   `json:"end_date"`
		Metrics        []string `json:"metrics"`
	}
	req, err := agent.DecodeCall(env, raw, &a)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.AnalysisResult) == "" {
		return nil, errors.New("analysis_result is empty")
	}
	start, end, err := span(a.StartDate, a.EndDate, t.now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1), 14)
	if err != nil {
		return nil, err
	}
	g, err := t.goods.GetGoods(ctx, &basicv1.GetGoodsRequest{Id: a.ProductID})
	if err != nil {
		return nil, fmt.Errorf("product_id %d: %s", a.ProductID, agent.ToolErrorMessage(err))
	}
	name := g.GetGoods().GetName()
	p := &Plan{TenantID: req.Identity.TenantID, Title: strings.TrimSpace(a.Title), Goal: strings.TrimSpace(a.Goal), ProductIDs: []int64{a.ProductID},
		ProductNames: []string{name}, Mechanics: strings.TrimSpace(a.Mechanics), DiscountRate: a.DiscountRate, Budget: a.Budget,
		StartDate: start, EndDate: end, Metrics: a.Metrics, AnalysisResult: a.AnalysisResult, CreatedBy: req.Identity.UserID,
		ConversationID: req.ConversationID}
	if p.Title == "" {
		p.Title = "Promotion: " + name
	}
	if p.Goal == "" {
		p.Goal = "Lift the sales of " + name
	}
	if p.Mechanics == "" && p.DiscountRate > 0 {
		p.Mechanics = fmt.Sprintf("%g%% off", p.DiscountRate*100)
	}
	if len(p.Metrics) == 0 {
		p.Metrics = []string{"units_sold", "line_amount"}
	}
	stored, err := t.store.CreatePlan(ctx, p)
	if err != nil {
		return nil, err
	}
	pb := PlanPB(stored)
	return &agent.ToolResult{JSON: map[string]any{"template_id": stored.ID, "status": stored.Status, "title": pb.Title, "goal": pb.Goal,
		"product": map[string]any{"id": a.ProductID, "name": name}, "mechanics": pb.Mechanics, "discount_rate": pb.DiscountRate,
		"budget": pb.Budget, "start_date": pb.StartDate, "end_date": pb.EndDate, "metrics": pb.Metrics}, Data: stored,
		Summary: fmt.Sprintf("template %d for %s (%s – %s)", stored.ID, name, pb.StartDate, pb.EndDate)}, nil
}

// --- promotion_strategy --------------------------------------------------------------

type strategy struct{ store *Store }

func (t *strategy) Name() string { return ToolStrategy }
func (t *strategy) Description() string {
	return "Link an execution plan to a promotion plan template (template_id from create_promotion_plan): strategy_info " +
		"describes how to carry it out, an object with optional name, channel (taobao, jd, douyin, all...), start_date, " +
		"end_date (YYYY-MM-DD; default the template's), budget, and any actions, pricing or audience details. Stored as " +
		"planned; returns the execution plan's id."
}
func (t *strategy) Parameters() *agent.Schema {
	return agent.Object(map[string]*agent.Schema{
		"template_id":   {Type: "integer", Description: "the template's id", Minimum: ptr(1.0)},
		"strategy_info": {Description: "the execution strategy: an object (name, channel, start_date, end_date, budget, actions...) or a text"},
	}, "template_id", "strategy_info")
}

func (t *strategy) Call(ctx context.Context, env *agent.ToolEnv, raw json.RawMessage) (*agent.ToolResult, error) {
	var a struct {
		TemplateID   int64           `json:"template_id"`
		StrategyInfo json.RawMessage `json:"strategy_info"`
	}
	req, err := agent.DecodeCall(env, raw, &a)
	if err != nil {
		return nil, err
	}
	var info map[string]any
	if json.Unmarshal(a.StrategyInfo, &info) != nil {
		var text string
		if json.Unmarshal(a.StrategyInfo, &text) != nil || strings.TrimSpace(text) == "" {
			return nil, errors.New("strategy_info must be an object or a non-empty text")
		}
		info = map[string]any{"description": text}
	}
	if len(info) == 0 {
		return nil, errors.New("strategy_info is empty")
	}
	if b, _ := json.Marshal(info); len(b) > 32<<10 {
		return nil, errors.New("strategy_info is larger than 32 KiB")
	}
	plan, err := t.store.GetPlan(ctx, req.Identity.TenantID, a.TemplateID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("template_id: promotion plan %d not found", a.TemplateID)
	}
	if err != nil {
		return nil, err
	}
	if plan.Status == PlanCompleted || plan.Status == PlanCancelled {
		return nil, fmt.Errorf("template_id: promotion plan %d is %s", a.TemplateID, plan.Status)
	}
	text := func(k string) string { s, _ := info[k].(string); return strings.TrimSpace(s) }
	days := int(plan.EndDate.Sub(plan.StartDate).Hours()/24) + 1
	start, end, err := span(text("start_date"), text("end_date"), plan.StartDate, days)
	if err != nil {
		return nil, err
	}
	budget, _ := info["budget"].(float64)
	if budget < 0 {
		return nil, errors.New("budget must not be negative")
	}
	e := &Execution{TenantID: req.Identity.TenantID, TemplateID: plan.ID, Name: text("name"), Channel: text("channel"), StartDate: start,
		EndDate: end, Budget: budget, Strategy: info, CreatedBy: req.Identity.UserID}
	if e.Name == "" {
		e.Name = plan.Title + " · execution"
	}
	if len([]rune(e.Name)) > 200 || len([]rune(e.Channel)) > 64 {
		return nil, errors.New("name (200) or channel (64) is too long")
	}
	stored, err := t.store.CreateExecution(ctx, e)
	if errors.Is(err, ErrNotFound) { // the template was deleted meanwhile
		return nil, fmt.Errorf("template_id: promotion plan %d not found", a.TemplateID)
	}
	if err != nil {
		return nil, err
	}
	pb := ExecutionPB(stored)
	return &agent.ToolResult{JSON: map[string]any{"execution_id": stored.ID, "template_id": plan.ID, "status": stored.Status, "name": pb.Name,
		"channel": pb.Channel, "start_date": pb.StartDate, "end_date": pb.EndDate, "budget": pb.Budget}, Data: stored,
		Summary: fmt.Sprintf("execution %d of template %d (%s – %s)", stored.ID, plan.ID, pb.StartDate, pb.EndDate)}, nil
}
