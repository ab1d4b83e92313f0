// Package chatconfig is the chat service's configuration: the service's own variables
// (ChatConfig) and its agents' (LLMConfig), with their defaults and validation. The service
// loads it (chat.LoadConfig, its service.Def.Config); the agents (services/chat/agent)
// take the LLMConfig part.
package chatconfig

import (
	"fmt"
	"strconv"
	"time"

	"github.com/shopmind/shopmind/internal/config"
)

// Chat defaults.
const (
	DefaultChatHistoryMessages    = 20
	DefaultChatSessionIdleTimeout = 30 * time.Minute
	DefaultChatCleanupInterval    = 5 * time.Minute
	DefaultChatPipelineTimeout    = 2 * time.Minute
	DefaultChatWorkflowTimeout    = 10 * time.Minute
	DefaultChatWorkflowLease      = time.Minute
)

// ChatConfig configures the chat service (the gateway reads the keep-alive of its event
// streams, SHOPMIND_CHAT_SSE_KEEPALIVE).
// services/chat/CHAT.md lists the variables.
type ChatConfig struct {
	// HistoryMessages is how many of a conversation's most recent stored messages the agents
	// receive as history (SHOPMIND_CHAT_HISTORY_MESSAGES, 1 to 1000).
	HistoryMessages int
	// SessionIdleTimeout: the in-memory state of a session unused this long (its message
	// queue and cached history) is released by the periodic cleanup
	// (SHOPMIND_CHAT_SESSION_IDLE_TIMEOUT). Stored sessions and messages stay.
	SessionIdleTimeout time.Duration
	// CleanupInterval is the period of that cleanup (SHOPMIND_CHAT_CLEANUP_INTERVAL).
	CleanupInterval time.Duration
	// PipelineTimeout bounds one reply of the agents, whether or not the client is still
	// connected (SHOPMIND_CHAT_PIPELINE_TIMEOUT).
	PipelineTimeout time.Duration
	// WorkflowTimeout bounds one v1 workflow (SHOPMIND_CHAT_WORKFLOW_TIMEOUT).
	WorkflowTimeout time.Duration
	// WorkflowLease is how long a running workflow stays claimed by its process without a
	// renewal; one whose process died is marked failed once it ran out
	// (SHOPMIND_CHAT_WORKFLOW_LEASE, at least 3s).
	WorkflowLease time.Duration
}

// loadChat reads the chat variables, appending a message naming the variable to errs for
// each malformed value.
func loadChat(getenv func(string) string, errs *[]string) ChatConfig {
	dur := config.Vars{Getenv: getenv, Errs: errs}.Duration
	c := ChatConfig{
		HistoryMessages:    DefaultChatHistoryMessages,
		SessionIdleTimeout: dur("SHOPMIND_CHAT_SESSION_IDLE_TIMEOUT", DefaultChatSessionIdleTimeout),
		CleanupInterval:    dur("SHOPMIND_CHAT_CLEANUP_INTERVAL", DefaultChatCleanupInterval),
		PipelineTimeout:    dur("SHOPMIND_CHAT_PIPELINE_TIMEOUT", DefaultChatPipelineTimeout),
		WorkflowTimeout:    dur("SHOPMIND_CHAT_WORKFLOW_TIMEOUT", DefaultChatWorkflowTimeout),
		WorkflowLease:      dur("SHOPMIND_CHAT_WORKFLOW_LEASE", DefaultChatWorkflowLease),
	}
	if c.WorkflowLease < 3*time.Second {
		*errs = append(*errs, fmt.Sprintf("SHOPMIND_CHAT_WORKFLOW_LEASE: %s is shorter than 3s", c.WorkflowLease))
		c.WorkflowLease = DefaultChatWorkflowLease
	}
	if v := getenv("SHOPMIND_CHAT_HISTORY_MESSAGES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			*errs = append(*errs, fmt.Sprintf("SHOPMIND_CHAT_HISTORY_MESSAGES: %q is not an integer from 1 to 1000", v))
		} else {
			c.HistoryMessages = n
		}
	}
	return c
}

// Config is the chat service's whole configuration.
type Config struct {
	Chat ChatConfig
	// LLM configures the agents (llm.go).
	LLM LLMConfig
}

// Load reads the chat service's variables (the chat's, then the agents') through getenv
// and returns the configuration with a message naming the variable for each malformed
// value (none when it is valid).
func Load(getenv func(string) string) (Config, []string) {
	var errs []string
	c := Config{Chat: loadChat(getenv, &errs)}
	c.LLM = loadLLM(getenv, &errs)
	return c, errs
}
