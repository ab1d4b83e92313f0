// Package llmagent is the agent that answers with an OpenAI-compatible model: it streams
// the model's text, runs the tool calls of the agent registry and feeds their results back
// (AGENTS.md, "LLM agent").
package llmagent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/llm"
)

// DefaultMaxIterations bounds the model calls of one LLM answer.
const DefaultMaxIterations = 6

// ChatModel is the model the LLM agent talks to (*llm.Client).
type ChatModel interface {
	Stream(ctx context.Context, req llm.ChatRequest, onText func(string) error) (*llm.ChatResponse, error)
	Model() string
}

// Options configure the LLM agent.
type Options struct {
	// MaxIterations bounds the model calls of one answer (DefaultMaxIterations when 0). The
	// last allowed call is made with tool_choice "none", so the model has to answer.
	MaxIterations int
	// SystemPrompt replaces the built-in instructions; "{today}" is replaced by the date.
	SystemPrompt string
	// Clock gives the current time; nil: time.Now.
	Clock func() time.Time
	// Temperature of the model calls; nil: the client's default.
	Temperature *float64
	// Logger; nil: discard.
	Logger *slog.Logger
}

// Agent answers with an OpenAI-compatible model and the tool registry: it streams the
// model's text as chunk events, runs the tool calls (one ThinkingProcess render per tool
// step, updated in place when the step ends; a visualization for each query_metrics
// result), feeds the results back, and stops when the model answers without tool calls or
// at the iteration bound.
type Agent struct {
	model ChatModel
	tools *agent.Registry
	opts  Options
}

// New returns the agent.
func New(model ChatModel, tools *agent.Registry, opts Options) *Agent {
	if opts.MaxIterations <= 0 {
		opts.MaxIterations = DefaultMaxIterations
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.SystemPrompt == "" {
		opts.SystemPrompt = DefaultSystemPrompt
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Agent{model: model, tools: tools, opts: opts}
}

// DefaultSystemPrompt are the LLM agent's instructions.
const DefaultSystemPrompt = `You are ShopMind's business analyst for e-commerce merchants. Today is {today} (UTC).
Answer questions about the merchant's business with numbers from the tools only; never invent numbers.
How to work:
1. Find the metrics with search_indicators; use their machine names.
2. Run query_metrics with the metric names, optional dimensions (shop, goods, category, staff, platform, status), optional granularity (day, week, month) and the period: start_date and end_date (inclusive, YYYY-MM-DD, UTC) or a period phrase such as "last 7 days", "last month", "上个月".
3. When useful, compare with the previous period of the same length (a second query_metrics without dimensions).
When the query_plan tool is available, prefer it for metric questions that filter or exclude shops, platforms, categories or goods (ids from search_entities), rank from the bottom, compare periods, rank growth, ask for shares, list members above or below a threshold, or ask why a metric changed (analysis "drivers"): the plan computes the numbers; keep execute_sql for what a plan cannot say.
4. Answer briefly in the user's language (a question in Chinese gets a Chinese answer), in Markdown: the total, the change against the previous period, the leaders. The user also sees a chart of each query.
Rules: sales by goods or by category are measured with line_amount (the order-line amount): gmv is an order-level amount and cannot be split by goods or category. Use env_perception when the question refers to the current page, shop or filters. Use get_database_info to learn the tables, dimensions and SQL rules. When a tool fails, read its message and correct the call once; otherwise explain what went wrong.`

var toolTitles = map[string][2]string{
	agent.ToolSearchIndicators: {"Searching indicators", "检索指标"},
	agent.ToolGetDatabaseInfo:  {"Reading the database description", "读取数据库信息"},
	agent.ToolEnvPerception:    {"Looking at the current page", "感知当前页面"},
	agent.ToolQueryMetrics:     {"Querying metrics", "查询指标数据"},
	// the tools of the subpackages (entities, graph, team) and of services/chat/promotion
	"search_entities":           {"Searching goods, shops and categories", "检索商品、店铺与类目"},
	"search_knowledge_graph":    {"Searching the knowledge graph", "检索知识图谱"},
	"trigger_parallel_analysis": {"Running the expert team", "专家团队并行分析"},
	"create_promotion_plan":     {"Creating a promotion plan", "创建促销计划"},
	"promotion_strategy":        {"Linking an execution plan", "关联促销执行计划"},
}

func toolTitle(name string, zh bool) string {
	if t, ok := toolTitles[name]; ok {
		return agent.Tr(zh, t[0], t[1])
	}
	return agent.Tr(zh, "Running "+name, "调用 "+name)
}

func historyMessages(h []agent.Message) []llm.Message {
	out := make([]llm.Message, 0, len(h))
	for _, m := range h {
		lm := llm.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: tc.ID, Type: "function", Function: llm.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		if lm.Role == agent.RoleTool {
			lm.Name = "" // OpenAI's tool messages carry tool_call_id only
		}
		out = append(out, lm)
	}
	return out
}

// Answer implements Agent.
func (a *Agent) Answer(ctx context.Context, req *agent.Request, emit agent.Emit) error {
	if req.Identity != nil {
		ctx = authn.WithIdentity(ctx, req.Identity)
	}
	now := a.opts.Clock().UTC()
	e := agent.NewEmitter(emit, req.ConversationID, a.model.Model(), now)
	zh := agent.HasHan(req.Message)
	env := &agent.ToolEnv{Request: req, Emitter: e}
	usage := agent.UsageFrom(ctx)

	system := strings.ReplaceAll(a.opts.SystemPrompt, "{today}", now.Format("2006-01-02 (Monday)"))
	if u := req.CurrentUser; u != nil && u.GetUsername() != "" {
		system += "\nThe user is " + u.GetUsername() + "."
	}
	if req.CurrentPageInfo != nil && len(req.CurrentPageInfo.GetFields()) > 0 {
		system += "\nThe client sent page information: env_perception describes it."
	}
	msgs := append([]llm.Message{{Role: llm.RoleSystem, Content: system}}, historyMessages(req.History)...)
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: req.Message})
	defs := a.tools.Definitions()

	step, viz := 0, 0
	for it := 1; it <= a.opts.MaxIterations; it++ {
		last := it == a.opts.MaxIterations
		creq := llm.ChatRequest{Messages: msgs, Tools: defs, Temperature: a.opts.Temperature}
		if last && len(defs) > 0 {
			creq.ToolChoice = "none"
		}
		fresh := true
		resp, err := a.model.Stream(ctx, creq, func(s string) error {
			if fresh && e.Started() && e.Sent() != "" && !strings.HasSuffix(e.Sent(), "\n") {
				s = "\n\n" + s // a new turn's text after an earlier turn's
			}
			fresh = false
			return e.TextDelta(s)
		})
		if err != nil {
			return err
		}
		if usage != nil && resp.Usage != nil {
			usage.Add(resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
		}
		if len(resp.Message.ToolCalls) == 0 {
			reason := resp.FinishReason
			if reason != "length" {
				reason = "stop"
			}
			return e.Finish(reason)
		}
		if last {
			a.opts.Logger.Warn("agent loop bound reached", "iterations", it)
			note := agent.Tr(zh, fmt.Sprintf("\n\n(I stopped after %d steps without a final answer; please ask a narrower question.)", it),
				fmt.Sprintf("\n\n（已执行 %d 步仍未得出最终答案，已停止；请把问题问得更具体一些。）", it))
			if err := e.TextDelta(note); err != nil {
				return err
			}
			return e.Finish("length")
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Message.Content, ToolCalls: resp.Message.ToolCalls})
		for _, call := range resp.Message.ToolCalls {
			step++
			content, err := a.runTool(ctx, e, env, call, step, &viz, zh)
			if err != nil {
				return err
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: content})
		}
	}
	return nil
}

// runTool runs one tool call with its ThinkingProcess render (running, then done or
// error), and a visualization of query results. Only a failure to emit, or the end of the
// context, is returned as an error: tool failures are results the model reads.
func (a *Agent) runTool(ctx context.Context, e *agent.Emitter, env *agent.ToolEnv, call llm.ToolCall, step int, viz *int, zh bool) (string, error) {
	th := agent.NewThinking(e, fmt.Sprintf("thinking-%d", step), toolTitle(call.Function.Name, zh))
	var args any
	if json.Unmarshal([]byte(call.Function.Arguments), &args) != nil {
		args = call.Function.Arguments
	}
	detail, _ := json.Marshal(args)
	if err := th.Add(agent.Step{Title: toolTitle(call.Function.Name, zh), Tool: call.Function.Name, Detail: string(detail), Status: agent.StatusRunning}); err != nil {
		return "", err
	}
	content, res, terr := a.tools.Run(ctx, env, call.Function.Name, call.Function.Arguments)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if terr != nil {
		a.opts.Logger.Info("tool failed", "tool", call.Function.Name, "error", terr)
		th.Steps[0].Status, th.Steps[0].Detail = agent.StatusError, agent.ToolErrorMessage(terr)
		return content, th.Done(agent.StatusError)
	}
	th.Steps[0].Status = agent.StatusDone
	if res.Summary != "" {
		th.Steps[0].Detail = string(detail) + " → " + res.Summary
	}
	if err := th.Done(agent.StatusDone); err != nil {
		return "", err
	}
	if out, ok := res.Data.(*agent.QueryOutcome); ok && out.Response != nil && len(out.Response.GetRows()) > 0 {
		*viz++
		title := strings.Join(out.Args.Metrics, ", ")
		if len(out.Args.Dimensions) > 0 {
			title += agent.Tr(zh, " by ", " · 按") + strings.Join(out.Args.Dimensions, ", ")
		}
		title += " · " + out.Period.Range()
		if err := e.Visualization(charts.Build(fmt.Sprintf("viz-%d", *viz), title, out.Response, nil)); err != nil {
			return "", err
		}
	} else if res.Visualization != nil { // a tool's own chart (query_plan's table)
		*viz++
		v := proto.Clone(res.Visualization).(*chatv2.VisualizationEvent)
		v.Id = fmt.Sprintf("viz-%d", *viz)
		if err := e.Visualization(v); err != nil {
			return "", err
		}
	}
	return content, nil
}

// Tools is the agent's tool registry.
func (a *Agent) Tools() *agent.Registry { return a.tools }

// Options are the agent's options, defaults applied.
func (a *Agent) Options() Options { return a.opts }
