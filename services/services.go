// Package services lists every ShopMind service the binary can run.
package services

import (
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/analysis"
	"github.com/shopmind/shopmind/services/basic"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/crx"
	"github.com/shopmind/shopmind/services/nl2sql"
	"github.com/shopmind/shopmind/services/notify"
	"github.com/shopmind/shopmind/services/system"
	"github.com/shopmind/shopmind/services/tenant"
)

// All returns the service definitions in start order.
func All() []service.Def {
	defs := []service.Def{
		tenant.Service(), system.Service(), analysis.Service(), basic.Service(),
		notify.Service(), chat.Service(),
	}
	defs = append(defs, nl2sql.Services()...) // the bridge and its built-in provider
	return append(defs, crx.Service())
}
