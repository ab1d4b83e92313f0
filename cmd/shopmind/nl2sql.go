package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/services"
	"github.com/shopmind/shopmind/services/nl2sql"
)

const nl2sqlUsage = `shopmind nl2sql setup [--rebuild-metadata]
                                      provision datasource, metadata, policy, role and bot at
                                      the NL2SQL provider (SHOPMIND_NL2SQL_API_URL and _API_KEY;
                                      or the built-in one at SHOPMIND_NL2SQL_PROVIDER_ADDR) and
                                      print the ids to configure; safe to re-run`

// runNL2SQL is `shopmind nl2sql setup`.
func runNL2SQL(ctx context.Context, args []string, cio cmdIO) error {
	if len(args) == 0 || args[0] != "setup" {
		return fmt.Errorf("nl2sql: want a subcommand\n%s", nl2sqlUsage)
	}
	fs := flag.NewFlagSet("nl2sql setup", flag.ContinueOnError)
	fs.SetOutput(cio.stderr)
	rebuild := fs.Bool("rebuild-metadata", false, "rebuild the datasource metadata even when it exists")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("nl2sql setup: unexpected argument %q\n%s", fs.Arg(0), nl2sqlUsage)
	}
	cfg, err := app.LoadConfig(cio.getenv, services.All())
	if err != nil {
		return err
	}
	res, err := nl2sql.RunSetup(ctx, &cfg.Config, *app.ServiceConfig[nl2sql.Config](cfg, "nl2sql"), *rebuild)
	if err != nil {
		return fmt.Errorf("nl2sql setup: %w", err)
	}
	fmt.Fprintf(cio.stdout, "# NL2SQL provider set up: datasource with %d tables (metadata rebuilt: %v), policy %s.\n# Put these in the configuration:\n%s",
		res.Tables, res.MetaRebuilt, res.PolicyID, res)
	return nil
}
