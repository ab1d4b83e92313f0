// The tool trigger_parallel_analysis.

package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/shopmind/shopmind/services/chat/agent"
)

// Tool returns trigger_parallel_analysis over the team.
func (t *Team) Tool() agent.Tool { return &parallelTool{team: t} }

type parallelTool struct{ team *Team }

func (p *parallelTool) Name() string { return ToolTriggerParallelAnalysis }
func (p *parallelTool) Description() string {
	var b strings.Builder
	b.WriteString("Run a broad analysis with several expert agents in parallel and get their findings to merge into one answer. " +
		"Use it when the question spans several areas (for example sales, goods and shops of a period). Experts: ")
	for i, x := range p.team.experts {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s)", x.Name, x.Title)
	}
	b.WriteString(". Give the task with its period; omit agents_to_use for all experts.")
	return b.String()
}

func (p *parallelTool) Parameters() *agent.Schema {
	enum := make([]any, len(p.team.experts))
	for i, x := range p.team.experts {
		enum[i] = x.Name
	}
	maxLen, maxItems := 2000, len(enum)
	return agent.Object(map[string]*agent.Schema{
		"task_description": {Type: "string", Description: "the analysis to run, with its period, for example \"analyse last month's sales, goods and shops\"", MaxLength: &maxLen},
		"agents_to_use":    {Type: "array", Items: &agent.Schema{Type: "string", Enum: enum}, MaxItems: &maxItems, Description: "the experts to ask; empty: all"},
	}, "task_description")
}

// ExpertReport is one expert's part of the tool's result.
type ExpertReport struct {
	Agent    string `json:"agent"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	Findings string `json:"findings,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Outcome is the tool's in-process result (ToolResult.Data).
type Outcome struct {
	Task    Task
	Results []Result
}

func (p *parallelTool) Call(ctx context.Context, env *agent.ToolEnv, raw json.RawMessage) (*agent.ToolResult, error) {
	var args struct {
		TaskDescription string   `json:"task_description"`
		AgentsToUse     []string `json:"agents_to_use"`
	}
	if _, err := agent.DecodeCall(env, raw, &args); err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.TaskDescription) == "" {
		return nil, errors.New("task_description is empty")
	}
	task := Task{Description: args.TaskDescription, ZH: agent.HasHan(args.TaskDescription) || agent.HasHan(env.Request.Message)}
	results, err := p.team.Analyse(ctx, env.Emitter, env, task, args.AgentsToUse)
	if err != nil {
		return nil, err
	}
	reports := make([]ExpertReport, len(results))
	done := 0
	for i, r := range results {
		reports[i] = ExpertReport{Agent: r.Expert.Name, Title: r.Expert.TitleIn(task.ZH), Status: r.Status()}
		if r.Err != nil {
			reports[i].Error = agent.ToolErrorMessage(r.Err)
			continue
		}
		done++
		reports[i].Findings = r.Finding.Text
		if env.Emitter != nil {
			for _, v := range r.Finding.Visualizations {
				if err := env.Emitter.Visualization(v); err != nil {
					return nil, err
				}
			}
		}
	}
	return &agent.ToolResult{JSON: map[string]any{"task": task.Description, "results": reports}, Data: &Outcome{Task: task, Results: results},
		Summary: fmt.Sprintf("%d of %d experts done", done, len(results))}, nil
}
