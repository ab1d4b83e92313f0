// Command shopmind is the one ShopMind binary.
//
//	shopmind serve [--target=all|gateway,tenant,system,analysis,basic,notify,chat,nl2sql,nl2sql-provider,crx]
//	shopmind targets
//	shopmind devcert [--dir=.devcert]
//	shopmind demo-data [--orders=N] [--tenant=CODE] [--seed=S] [--analytics-url=URL] [--replace]
//	shopmind tenant create --code=CODE --name=NAME [--admin=USERNAME] [--admin-password-env=VAR]
//	shopmind import orders --tenant=CODE [--format=F] [--shop-name=NAME] FILE
//	shopmind probe --grpc=HOST:PORT | --http=URL
//	shopmind nl2sql setup [--rebuild-metadata]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/shopmind/shopmind/gateway"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/logging"
	"github.com/shopmind/shopmind/internal/version"
	"github.com/shopmind/shopmind/services"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "shopmind:", err)
		os.Exit(1)
	}
}

func usage() string {
	return `usage:
  shopmind serve [--target=TARGETS]   run the platform (default target: all)
  shopmind targets                    list the targets
  shopmind version                    print the version (of the binary and its API contract)
  shopmind devcert [--dir=DIR]        write a self-signed localhost certificate (default .devcert)
                                      for SHOPMIND_TLS_CERT_FILE / SHOPMIND_TLS_KEY_FILE
  ` + demoDataUsage + `
  ` + tenantUsage + `
  ` + importUsage + `
  ` + probeUsage + `
  ` + nl2sqlUsage + `
Configuration comes from SHOPMIND_* environment variables (see README).`
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage())
	}
	if u := commandUsage(args[0]); u != "" && wantsHelp(args[1:]) {
		fmt.Println(u)
		return nil
	}
	defs := services.All()
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	switch args[0] {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		target := fs.String("target", app.TargetAll, "comma list of targets: "+strings.Join(app.Targets(names), ", "))
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		cfg, err := app.LoadEnv(defs)
		if err != nil {
			return err
		}
		logger := logging.New(os.Stderr, cfg.LogLevel)
		startProfiler(logger)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return app.Run(ctx, app.Options{Config: cfg, Logger: logger, Targets: *target, Services: defs})
	case "targets":
		fmt.Println(strings.Join(app.Targets(names), "\n"))
		return nil
	case "version":
		fmt.Println(version.Version)
		return nil
	case "devcert":
		fs := flag.NewFlagSet("devcert", flag.ContinueOnError)
		dir := fs.String("dir", ".devcert", "folder for cert.pem and key.pem")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		certFile, keyFile, err := gateway.WriteDevCert(*dir)
		if err != nil {
			return fmt.Errorf("devcert: %w", err)
		}
		fmt.Printf("SHOPMIND_TLS_CERT_FILE=%s\nSHOPMIND_TLS_KEY_FILE=%s\n", certFile, keyFile)
		return nil
	case "demo-data":
		return runDemoData(args[1:])
	case "tenant":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return runTenant(ctx, args[1:], osIO())
	case "import":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return runImport(ctx, args[1:], osIO())
	case "probe":
		return runProbe(args[1:])
	case "nl2sql":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return runNL2SQL(ctx, args[1:], osIO())
	case "help", "-h", "--help":
		fmt.Println(usage())
		return nil
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage())
	}
}

// wantsHelp reports whether a command's arguments ask for its usage: -h, -help or --help
// anywhere before a "--", or "help" as the first.
func wantsHelp(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "-h" || a == "-help" || a == "--help", i == 0 && a == "help":
			return true
		}
	}
	return false
}

// commandUsage is the part of usage() about one command: its "shopmind <command> ..." lines
// and the lines indented under them ("" for a command usage() does not list). Every
// command listed in usage() answers `shopmind <command> --help` (and -h) with it and exit
// status 0, before its own flags are parsed (TestEveryCommandHasHelp).
func commandUsage(command string) string {
	var out []string
	in := false
	for _, line := range strings.Split(usage(), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "shopmind "):
			rest := strings.TrimPrefix(trimmed, "shopmind ")
			in = rest == command || strings.HasPrefix(rest, command+" ")
		case !strings.HasPrefix(line, "  "):
			in = false
		}
		if in {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "usage:\n" + strings.Join(out, "\n")
}
