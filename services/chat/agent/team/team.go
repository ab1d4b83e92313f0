// Package team is the agent team of a message: a planner and expert agents (sales, goods
// and categories, shops and staff, promotion), each with its own instructions and tools.
// The tool trigger_parallel_analysis fans a task out to the chosen experts concurrently
// (bounded concurrency, a deadline per expert, each failure isolated and reported),
// streams a TaskPlanCard with each expert's state as it changes, and returns the experts'
// findings for the planner to merge.
//
// Two kinds of experts run the same fan-out: LLMRunner (each expert an LLM loop over its
// own tools, when a model is configured) and OfflineRunner (each expert computes its
// findings from the semantic layer with query_metrics). Planner is the offline planner: it
// sends broad analysis requests to the team and other questions to the offline analyst.
package team

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/entities"
	"github.com/shopmind/shopmind/services/chat/agent/graph"
	"github.com/shopmind/shopmind/services/chat/promotion"
)

// Expert names (the values of agents_to_use).
const (
	ExpertSales     = "sales"
	ExpertGoods     = "goods"
	ExpertShops     = "shops"
	ExpertPromotion = "promotion"
)

// Expert is one agent of the team.
type Expert struct {
	// Name is the machine name the planner uses in agents_to_use.
	Name string
	// Title and TitleZH name the expert's subtask on the TaskPlanCard and its section.
	Title, TitleZH string
	// Instructions are the expert's system prompt when it runs as an LLM loop ("{today}"
	// is replaced by the date).
	Instructions string
	// Tools are the registry tools the expert may call.
	Tools []string
}

// TitleIn is the expert's title in the answer's language.
func (x Expert) TitleIn(zh bool) string { return agent.Tr(zh, x.Title, x.TitleZH) }

const expertRules = `Today is {today} (UTC). Use numbers from the tools only; never invent numbers. ` +
	`Answer in the language of the task, in Markdown, briefly: a few bullet points with the numbers, the period and the change against the previous period where you have it. ` +
	`Sales by goods or by category are measured with line_amount (gmv is an order-level amount and cannot be split by goods or category). ` +
	`When a tool fails, read its message and correct the call once; otherwise say what could not be computed.`

// DefaultExperts are the team's experts.
func DefaultExperts() []Expert {
	metricTools := []string{agent.ToolSearchIndicators, agent.ToolQueryMetrics, agent.ToolGetDatabaseInfo}
	return []Expert{
		{Name: ExpertSales, Title: "Sales", TitleZH: "销售",
			Instructions: "You are the sales expert of ShopMind's analysis team. Analyse the sales of the task's period: GMV, orders, buyers, average order value, their change against the previous period of the same length, and the trend by day or week. " + expertRules,
			Tools:        metricTools},
		{Name: ExpertGoods, Title: "Goods and categories", TitleZH: "商品与类目",
			Instructions: "You are the goods and categories expert of ShopMind's analysis team. Analyse which categories and goods sell (line_amount and units_sold by category and by goods), their shares and their change against the previous period. Use search_entities to find goods, categories or item numbers the task names. " + expertRules,
			Tools:        append(slices.Clone(metricTools), ToolSearchEntities)},
		{Name: ExpertShops, Title: "Shops and staff", TitleZH: "店铺与员工",
			Instructions: "You are the shops and staff expert of ShopMind's analysis team. Compare the shops (gmv and order_count by shop, shares, change against the previous period) and, where the data allows, the staff. Use search_entities to find shops or staff the task names and search_knowledge_graph for how shops, staff and goods relate. " + expertRules,
			Tools:        append(slices.Clone(metricTools), ToolSearchEntities, ToolSearchKnowledgeGraph)},
		{Name: ExpertPromotion, Title: "Promotion", TitleZH: "促销",
			Instructions: "You are the promotion expert of ShopMind's analysis team. Find goods that deserve a promotion (units sold falling against the previous period, slow movers), say why with the numbers, and when the task asks for a plan, create it with create_promotion_plan (the analysis and a goods id) and link an execution with promotion_strategy. Use search_knowledge_graph for goods bought together. " + expertRules,
			Tools:        append(slices.Clone(metricTools), ToolSearchEntities, ToolSearchKnowledgeGraph, ToolCreatePromotionPlan, ToolPromotionStrategy)},
	}
}

// Tool names of the team and of the tools its experts use beyond the metric tools.
const (
	ToolTriggerParallelAnalysis = "trigger_parallel_analysis"
	ToolSearchEntities          = entities.ToolName
	ToolSearchKnowledgeGraph    = graph.ToolName
	ToolCreatePromotionPlan     = promotion.ToolCreatePlan
	ToolPromotionStrategy       = promotion.ToolStrategy
)

// Task is what an expert is asked.
type Task struct {
	// Description is the planner's task text (the user's words for the offline planner).
	Description string
	// ZH is true when the answer is in Chinese.
	ZH bool
}

// Finding is what an expert found.
type Finding struct {
	// Text is the expert's section of the answer (Markdown, without its heading).
	Text string
	// Figures are the numbers in Text with where they come from (offline experts).
	Figures []Figure `json:",omitempty"`
	// Visualizations are charts of the finding.
	Visualizations []*chatv2.VisualizationEvent `json:"-"`
}

// Figure is one number of a finding: a metric's value over a period, for a dimension
// value (Label) or the total.
type Figure struct {
	Metric    string  `json:"metric"`
	Dimension string  `json:"dimension,omitempty"`
	Label     string  `json:"label,omitempty"`
	Start     string  `json:"start_date"`
	End       string  `json:"end_date"` // inclusive
	Value     float64 `json:"value"`
}

// Runner runs one expert on a task. env carries the caller (its tools run as the caller).
// Run must not emit events: the team's coordinator does.
type Runner interface {
	Run(ctx context.Context, env *agent.ToolEnv, x Expert, task Task) (*Finding, error)
}

// Options configure the fan-out.
type Options struct {
	// Concurrency bounds the experts running at once (default 4).
	Concurrency int
	// Timeout is each expert's deadline (default 90 s).
	Timeout time.Duration
	// Logger; nil: discard.
	Logger *slog.Logger
}

// Team is the experts and how they run.
type Team struct {
	experts []Expert
	runner  Runner
	opts    Options
}

// New returns a team of experts run by runner.
func New(experts []Expert, runner Runner, opts Options) *Team {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 90 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Team{experts: experts, runner: runner, opts: opts}
}

// Experts are the team's experts.
func (t *Team) Experts() []Expert { return slices.Clone(t.experts) }

// Names are the experts' names.
func (t *Team) Names() []string {
	out := make([]string, len(t.experts))
	for i, x := range t.experts {
		out[i] = x.Name
	}
	return out
}

// Result is one expert's outcome: a finding, or the failure.
type Result struct {
	Expert  Expert
	Finding *Finding
	Err     error
}

// Status is done or failed.
func (r Result) Status() string {
	if r.Err != nil {
		return agent.TaskFailed
	}
	return agent.TaskDone
}

// PlanID is the render id of the team's TaskPlanCard.
const PlanID = "team-plan"

type progress struct {
	i      int
	start  bool
	result Result
}

// Analyse runs the named experts (all when names is empty; unknown names are an error)
// on the task, at most Concurrency at once, each within Timeout; one expert's failure or
// panic fails its subtask only. e (may be nil) receives the TaskPlanCard: every subtask
// todo, then in_progress, then done or failed, sent as each changes, from this goroutine
// only. The results are in the order of the names. Only the end of ctx is returned as an
// error (with the results so far).
func (t *Team) Analyse(ctx context.Context, e *agent.Emitter, env *agent.ToolEnv, task Task, names []string) ([]Result, error) {
	chosen, err := t.choose(names)
	if err != nil {
		return nil, err
	}
	tasks := make([]agent.Step, len(chosen))
	for i, x := range chosen {
		tasks[i] = agent.Step{ID: x.Name, Title: x.TitleIn(task.ZH), Status: agent.TaskTodo, Tool: ToolTriggerParallelAnalysis}
	}
	var card *agent.Plan
	if e != nil {
		card = agent.NewPlan(e, PlanID, agent.Tr(task.ZH, "Team analysis", "团队分析"), tasks)
		if err := card.Send(); err != nil {
			return nil, err
		}
	}
	set := func(id, status string) error {
		if card == nil {
			return nil
		}
		return card.Set(id, status)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates := make(chan progress, 2*len(chosen))
	sem := make(chan struct{}, t.opts.Concurrency)
	for i, x := range chosen {
		go func() {
			select {
			case sem <- struct{}{}:
			case <-runCtx.Done():
				updates <- progress{i: i, result: Result{Expert: x, Err: runCtx.Err()}}
				return
			}
			defer func() { <-sem }()
			updates <- progress{i: i, start: true}
			updates <- progress{i: i, result: t.runOne(runCtx, env, x, task)}
		}()
	}
	results := make([]Result, len(chosen))
	var emitErr error
	update := func(id, status string) {
		if emitErr == nil {
			if emitErr = set(id, status); emitErr != nil {
				cancel() // the reply cannot be recorded: stop the experts
			}
		}
	}
	for left := len(chosen); left > 0; {
		p := <-updates
		if p.start {
			update(chosen[p.i].Name, agent.TaskInProgress)
			continue
		}
		left--
		results[p.i] = p.result
		if p.result.Err != nil {
			t.opts.Logger.Info("expert failed", "expert", chosen[p.i].Name, "error", p.result.Err)
		}
		update(chosen[p.i].Name, p.result.Status())
	}
	if ctx.Err() != nil {
		return results, ctx.Err()
	}
	return results, emitErr
}

// runOne runs an expert within its deadline; a panic is its failure.
func (t *Team) runOne(ctx context.Context, env *agent.ToolEnv, x Expert, task Task) (res Result) {
	res.Expert = x
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			t.opts.Logger.Error("expert panicked", "expert", x.Name, "panic", p, "stack", string(debug.Stack()))
			res.Finding, res.Err = nil, fmt.Errorf("expert %s failed unexpectedly", x.Name)
		}
	}()
	f, err := t.runner.Run(ctx, env, x, task)
	if err == nil && f == nil {
		err = fmt.Errorf("expert %s returned nothing", x.Name)
	}
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("expert %s did not finish within %s", x.Name, t.opts.Timeout)
	}
	res.Finding, res.Err = f, err
	return res
}

func (t *Team) choose(names []string) ([]Expert, error) {
	if len(names) == 0 {
		return t.Experts(), nil
	}
	var out []Expert
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if seen[n] {
			continue
		}
		seen[n] = true
		i := slices.IndexFunc(t.experts, func(x Expert) bool { return x.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("agents_to_use: unknown agent %q; the team has %s", n, strings.Join(t.Names(), ", "))
		}
		out = append(out, t.experts[i])
	}
	return out, nil
}
