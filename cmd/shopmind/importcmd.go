package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/logging"
	"github.com/shopmind/shopmind/services"
	"github.com/shopmind/shopmind/services/basic"
)

// importUsage is the usage line of import.
var importUsage = strings.TrimSpace(`
  shopmind import orders --tenant=CODE [--format=F] [--shop-name=NAME | --shop-id=ID] [--encoding=E] [--mapping=M] FILE
                                      import an order export (.csv or .xlsx) into the tenant, with a
                                      progress bar; formats shopmind, shopify, taobao, jd, pdd, mapped
                                      (default: detected from the header row); see services/basic/IMPORT.md`)

// runImport is `shopmind import orders`: the same import as POST
// /basic/api/v1/basic/imports/orders (basic.Importer), run on the platform database, for
// first loads of years of history.
func runImport(ctx context.Context, args []string, cio cmdIO) error {
	if len(args) == 0 || args[0] != "orders" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(cio.stdout, importUsage)
			return nil
		}
		return fmt.Errorf("import: want the kind (orders)\n%s", importUsage)
	}
	fs := flag.NewFlagSet("import orders", flag.ContinueOnError)
	fs.SetOutput(cio.stderr)
	tenantCode := fs.String("tenant", "", "tenant code")
	format := fs.String("format", "", "shopmind, shopify, taobao, jd, pdd or mapped (default: detected)")
	shopName := fs.String("shop-name", "", "shop the orders go to (found by platform and name, or created)")
	shopID := fs.Int64("shop-id", 0, "an existing shop's id instead of --shop-name")
	encoding := fs.String("encoding", "", "utf-8 or gb18030 (default: detected)")
	mapping := fs.String("mapping", "", "for --format=mapped: column=file column pairs, comma separated")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch {
	case *tenantCode == "":
		return fmt.Errorf("import orders: --tenant is required\n%s", importUsage)
	case fs.NArg() != 1:
		return fmt.Errorf("import orders: want one file\n%s", importUsage)
	}
	opts := &basicv1.ImportOptions{Kind: "orders", Format: *format, ShopName: *shopName, ShopId: *shopID, Encoding: *encoding,
		Mapping: *mapping, FileName: filepath.Base(fs.Arg(0))}
	// The contract's rules, as the service checks them.
	if err := validateOptions(opts); err != nil {
		return fmt.Errorf("import orders: %w", err)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("import orders: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("import orders: %w", err)
	}
	opts.DeclaredSize = st.Size()

	cfg, err := app.LoadConfig(cio.getenv, services.All())
	if err != nil {
		return err
	}
	p, closeDB, err := platformDB(ctx, cfg, cio, "import orders")
	if err != nil {
		return err
	}
	defer closeDB()
	var tenantID int64
	err = p.DB.QueryRow(ctx, "SELECT id FROM tenant.tenants WHERE code = $1", *tenantCode).Scan(&tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("import orders: tenant %q not found (`shopmind tenant list`)", *tenantCode)
	}
	if err != nil {
		return fmt.Errorf("import orders: %w", err)
	}
	log := logging.New(cio.stderr, cfg.LogLevel)
	wh, err := warehouse.Open(ctx, cfg.Analytics.URL, p.DB, log)
	if err != nil {
		return fmt.Errorf("import orders: analytical store: %w", err)
	}
	defer wh.Close()
	if err := wh.EnsureSchema(ctx); err != nil {
		return fmt.Errorf("import orders: analytical store: %w", err)
	}
	bcfg := *app.ServiceConfig[basic.Config](cfg, "basic")
	im := basic.NewImporter(ctx, p.DB, wh, log, bcfg)

	cr := &countingReader{r: f}
	bar := &progressBar{w: cio.stderr, total: st.Size(), read: &cr.n, quiet: *quiet, start: time.Now()}
	job, err := im.Run(ctx, basic.ImportParams{TenantID: tenantID, Options: opts, Progress: bar.update}, cr)
	if job != nil {
		bar.update(job)
		bar.done()
	}
	// Whatever was stored reaches the analytical store before the command ends.
	if ferr := im.Flush(tenantID); ferr != nil && err == nil {
		err = fmt.Errorf("analytical store: %w (the orders are stored in basic and pushed at the next start of the basic service)", ferr)
	}
	if job != nil {
		fmt.Fprintf(cio.stdout, "import job %d (%s, %s): %s; %d rows read, %d stored, %d rejected; orders %d created, %d updated, %d unchanged\n",
			job.GetId(), job.GetFormat(), job.GetEncoding(), job.GetStatus(), job.GetRowsRead(), job.GetRowsStored(), job.GetRowsRejected(),
			job.GetOrdersCreated(), job.GetOrdersUpdated(), job.GetOrdersUnchanged())
		for i, e := range job.GetErrors() {
			if i == 20 {
				fmt.Fprintf(cio.stdout, "  ... %d more rejected rows (GET /basic/api/v1/basic/imports/%d/errors)\n", job.GetRowsRejected()-20, job.GetId())
				break
			}
			fmt.Fprintf(cio.stdout, "  line %d, %s: %s\n", e.GetLine(), orDash(e.GetColumn()), e.GetReason())
		}
	}
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return fmt.Errorf("import orders: %s", ae.Message)
		}
		return fmt.Errorf("import orders: %w", err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// validateOptions applies the contract's rules on ImportOptions (protovalidate), as the
// service's interceptor does for the RPC.
func validateOptions(o *basicv1.ImportOptions) error {
	switch o.GetFormat() {
	case "", "shopmind", "shopify", "taobao", "jd", "pdd", "mapped":
	default:
		return fmt.Errorf("--format: %q is not one of shopmind, shopify, taobao, jd, pdd, mapped", o.GetFormat())
	}
	switch o.GetEncoding() {
	case "", "utf-8", "gb18030":
	default:
		return fmt.Errorf("--encoding: %q is not utf-8 or gb18030", o.GetEncoding())
	}
	if o.GetShopId() < 0 {
		return errors.New("--shop-id: must not be negative")
	}
	if len([]rune(o.GetShopName())) > 128 {
		return errors.New("--shop-name: at most 128 characters")
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// progressBar draws "[#####.....]  45%  1.2 GB of 2.6 GB  120,000 rows, 3 rejected" on one
// line of standard error after each stored batch.
type progressBar struct {
	w     io.Writer
	total int64
	read  *atomic.Int64
	quiet bool
	start time.Time
	drawn bool
}

func (b *progressBar) update(j *basicv1.ImportJob) {
	if b.quiet {
		return
	}
	done := b.read.Load()
	frac := 1.0
	if b.total > 0 {
		frac = min(1, float64(done)/float64(b.total))
	}
	const width = 30
	filled := int(frac * width)
	rate := float64(j.GetRowsRead()) / max(time.Since(b.start).Seconds(), 0.001)
	fmt.Fprintf(b.w, "\r[%s%s] %3.0f%%  %s of %s  %d rows, %d stored, %d rejected  %.0f rows/s ",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), frac*100, size(done), size(b.total),
		j.GetRowsRead(), j.GetRowsStored(), j.GetRowsRejected(), rate)
	b.drawn = true
}

func (b *progressBar) done() {
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
