package chat

import (
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
