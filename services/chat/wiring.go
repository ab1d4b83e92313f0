package chat

import (
	"context"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// productionOptions wires the production agent and stores.
// INTERIM (chat issue in progress): replaced by the agent package's constructor.
func productionOptions() Options {
	return Options{NewAgent: func(context.Context, service.Deps) (agent.Agent, []HealthChecker, error) {
		return interimAgent{}, nil, nil
	}}
}

type interimAgent struct{}

func (interimAgent) Answer(context.Context, *agent.Request, agent.Emit) error {
	return apperr.New(apperr.KindUnavailable, "the assistant is not available yet")
}
