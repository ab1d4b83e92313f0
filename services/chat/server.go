// Package chat is the chat service: streamed replies of the agents (v2, and the v1 single
// agent), sessions and their history, and the health of the stores it depends on. The
// service describes its streams (sse.go) and the gateway's generic bridge serves them as
// server-sent events; CHAT.md describes the endpoints, the event shapes and the
// configuration.
//
// A message goes through: validation (400 before any stream), the conversation's turn (one
// message of a conversation at a time), the user message stored, the history read (cached
// per conversation, repaired), then a pipeline: the agent runs in its own goroutine with
// its own deadline, its events are recorded and streamed through a buffered channel, and
// the reply is stored when it ends, whether or not the caller is still there.
//
// Workflows (v1 StartWorkflow, GetWorkflow, StreamWorkflowEvents, CancelWorkflow; workflow.go)
// run a task through the same agent in the background, their events stored. The service
// also describes its topics on the gateway's WebSocket channel (topics.go): workflows and
// sessions.
package chat

import (
	"context"
	"embed"
	"errors"

	"google.golang.org/grpc"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/chatconfig"
	"github.com/shopmind/shopmind/services/chat/promotion"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func migrations() *postgres.Migrations {
	return postgres.Embedded("chat", migrationFiles)
}

// Options are what the binary plugs into the chat service.
type Options struct {
	// NewAgent builds the agent that answers messages, and the checks of the stores it
	// depends on (the vector store), which the health endpoint reports after PostgreSQL.
	NewAgent func(ctx context.Context, deps service.Deps) (agent.Agent, []HealthChecker, error)
}

// Service describes the chat service to the binary, with the production agent.
func Service() service.Def { return ServiceWith(productionOptions()) }

// ServiceWith describes the chat service with the given agent and checkers (tests use it
// with their own agents).
func ServiceWith(opts Options) service.Def {
	var wf *workflows // set by Register
	return service.Def{
		Name:       "chat",
		Migrations: migrations(),
		Config:     service.ConfigLoader(LoadConfig),
		Register: func(ctx context.Context, s grpc.ServiceRegistrar, deps service.Deps) (err error) {
			wf, err = register(ctx, s, deps, opts)
			return err
		},
		// The workflows still running are stopped and marked failed while the database is
		// still there.
		Stop: func(context.Context) error {
			if wf != nil {
				wf.stopAll()
			}
			return nil
		},
		Gateway: restapi.Routes(restapi.Route(chatv2.RegisterChatServiceHandlerClient, chatv2.NewChatServiceClient), restapi.Route(chatv1.RegisterChatServiceHandlerClient, chatv1.NewChatServiceClient),
			restapi.Route(chatv1.RegisterSessionServiceHandlerClient, chatv1.NewSessionServiceClient), restapi.Route(chatv1.RegisterHealthServiceHandlerClient, chatv1.NewHealthServiceClient),
			restapi.Route(chatv1.RegisterPromotionServiceHandlerClient, chatv1.NewPromotionServiceClient)),
		Streams: streams(),
		Topics:  topics(),
	}
}

func register(ctx context.Context, s grpc.ServiceRegistrar, deps service.Deps, opts Options) (*workflows, error) {
	if opts.NewAgent == nil {
		return nil, errors.New("chat: no agent")
	}
	a, more, err := opts.NewAgent(ctx, deps)
	if err != nil {
		return nil, err
	}
	checkers := append([]HealthChecker{postgresChecker{pool: deps.DB}}, more...)
	cfg := withDefaults(service.Settings(deps, LoadConfig).Chat)
	st := &store{pool: deps.DB}
	sess := newSessions(cfg.SessionIdleTimeout)
	go sess.run(ctx, cfg.CleanupInterval, deps.Logger)
	x := &messageRunner{store: st, agent: a, sessions: sess, cfg: cfg, log: deps.Logger}
	wf := &workflows{store: st, agent: a, log: deps.Logger, timeout: cfg.WorkflowTimeout, lease: cfg.WorkflowLease, runner: x,
		runs: map[string]*workflowRun{}}
	go wf.maintain(ctx)
	chatv2.RegisterChatServiceServer(s, &chatV2{x: x})
	chatv1.RegisterChatServiceServer(s, &chatV1{x: x, wf: wf})
	chatv1.RegisterSessionServiceServer(s, &sessionServer{store: st, sessions: sess})
	chatv1.RegisterHealthServiceServer(s, &healthServer{checkers: checkers})
	chatv1.RegisterPromotionServiceServer(s, promotion.NewServer(promotion.NewStore(deps.DB)))
	return wf, nil
}

// withDefaults fills what a hand-built configuration (zero values) leaves out.
func withDefaults(c chatconfig.ChatConfig) chatconfig.ChatConfig {
	if c.HistoryMessages <= 0 {
		c.HistoryMessages = chatconfig.DefaultChatHistoryMessages
	}
	if c.SessionIdleTimeout <= 0 {
		c.SessionIdleTimeout = chatconfig.DefaultChatSessionIdleTimeout
	}
	if c.CleanupInterval <= 0 {
		c.CleanupInterval = chatconfig.DefaultChatCleanupInterval
	}
	if c.PipelineTimeout <= 0 {
		c.PipelineTimeout = chatconfig.DefaultChatPipelineTimeout
	}
	if c.WorkflowTimeout <= 0 {
		c.WorkflowTimeout = chatconfig.DefaultChatWorkflowTimeout
	}
	if c.WorkflowLease <= 0 {
		c.WorkflowLease = chatconfig.DefaultChatWorkflowLease
	}
	return c
}
