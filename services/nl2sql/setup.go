package nl2sql

import (
	"context"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/services/nl2sql/asktable"
)

// RunSetup is the one-time setup (`shopmind nl2sql setup`): it provisions, or finds, the
// datasource, its metadata, the policy, the role and the bot at the configured provider
// (SHOPMIND_NL2SQL_API_URL, or the built-in provider at SHOPMIND_NL2SQL_PROVIDER_ADDR),
// with the datasource connection of the configuration; re-running it is safe.
func RunSetup(ctx context.Context, platform *config.Config, c Config, rebuild bool) (asktable.SetupResult, error) {
	b := newBridge(withDefaults(c, platform), nil, nil, nil, nil)
	p, err := b.provider()
	if err != nil {
		return asktable.SetupResult{}, err
	}
	return asktable.Setup(ctx, p.client, b.setupParams(p.eff, &nl2sqlv1.SetupDatasourceRequest{RebuildMetadata: rebuild}))
}
