package chat

import (
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/chat/chatconfig"
)

// Config is the chat service's configuration: the chat's variables and its agents'
// (services/chat/chatconfig; CHAT.md and agent/AGENTS.md list them).
type Config = chatconfig.Config

// LoadConfig reads the chat service's variables through getenv and returns the
// configuration with a message naming the variable for each malformed value (none when it
// is valid).
func LoadConfig(getenv func(string) string) (Config, []string) {
	return chatconfig.Load(getenv)
}

// loadSettings is the service's Def.Config: a pointer to its configuration.
func loadSettings(getenv func(string) string) (any, []string) {
	cfg, errs := LoadConfig(getenv)
	return &cfg, errs
}

// settings returns the configuration the service received, or the defaults when it
// received none (a Deps built by hand).
func settings(deps service.Deps) Config {
	if c, ok := deps.Settings.(*Config); ok && c != nil {
		return *c
	}
	c, _ := LoadConfig(func(string) string { return "" })
	return c
}
