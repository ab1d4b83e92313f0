package chat

import (
	"context"

	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/build"
)

// productionOptions wires the production agent: the LLM agent when SHOPMIND_LLM_BASE_URL is
// set, the built-in offline analyst otherwise, both over the semantic layer; the vector
// store's health joins the health endpoint.
func productionOptions() Options {
	return Options{NewAgent: func(ctx context.Context, deps service.Deps) (agent.Agent, []HealthChecker, error) {
		a, checks, err := build.New(ctx, service.Settings(deps, LoadConfig).LLM, deps.Dial, deps.DB, deps.Logger)
		if err != nil {
			return nil, nil, err
		}
		hc := make([]HealthChecker, len(checks))
		for i, c := range checks {
			hc[i] = c
		}
		return a, hc, nil
	}}
}
