// The LLM experts: each expert an LLM loop with its own instructions and tools.

package team

import (
	"context"
	"strings"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/llmagent"
)

// LLMRunner runs each expert as an LLM loop (llmagent) with the expert's instructions as
// the system prompt and only the expert's tools (a subset of the registry, never
// trigger_parallel_analysis). The expert's text is its finding; its charts (one per
// successful query_metrics) are the finding's visualizations; its other events stay in
// the process.
type LLMRunner struct {
	model         llmagent.ChatModel
	tools         *agent.Registry
	maxIterations int
}

// NewLLMRunner returns the runner over model and the registry the experts' tools are taken
// from.
func NewLLMRunner(model llmagent.ChatModel, tools *agent.Registry, maxIterations int) *LLMRunner {
	return &LLMRunner{model: model, tools: tools, maxIterations: maxIterations}
}

// Run implements Runner.
func (l *LLMRunner) Run(ctx context.Context, env *agent.ToolEnv, x Expert, task Task) (*Finding, error) {
	names := make([]string, 0, len(x.Tools))
	for _, n := range x.Tools {
		if n != ToolTriggerParallelAnalysis {
			names = append(names, n)
		}
	}
	expert := llmagent.New(l.model, l.tools.Subset(names...), llmagent.Options{MaxIterations: l.maxIterations, SystemPrompt: x.Instructions})
	req := &agent.Request{Identity: env.Request.Identity, ConversationID: env.Request.ConversationID, Message: task.Description,
		CurrentUser: env.Request.CurrentUser, CurrentPageInfo: env.Request.CurrentPageInfo}
	var text strings.Builder
	f := &Finding{}
	err := expert.Answer(ctx, req, func(ev *chatv2.SendMessageResponse) error {
		for _, c := range ev.GetChunk().GetChoices() {
			text.WriteString(c.GetDelta().GetContent())
		}
		if v := ev.GetVisualization(); v != nil {
			v.Id = "team-" + x.Name + "-" + v.GetId()
			f.Visualizations = append(f.Visualizations, v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.Text = text.String()
	return f, nil
}
