package basic

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Pagination defaults and bounds of the spec (the request rules enforce 1..100 and >= 1).
const (
	defaultPageNum  = 1
	defaultPageSize = 10
)

// maxMoney bounds prices and costs: the columns are numeric(15,2).
const maxMoney = 9_999_999_999_999.99

// Goods statuses.
const (
	statusOnSale  = "on_sale"
	statusOffSale = "off_sale"
	statusDeleted = "deleted"
)

// Shop statuses.
const (
	shopActive   = "active"
	shopDisabled = "disabled"
	shopExpired  = "expired"
)

// platformRE is a platform code (Shop.platform).
var platformRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// page is a resolved page request.
type page struct {
	Num, Size int32
}

func (p page) offset() int64 { return int64(p.Num-1) * int64(p.Size) }

// pageOf applies the defaults to optional page_num and page_size.
func pageOf(num, size *int32) page {
	p := page{Num: defaultPageNum, Size: defaultPageSize}
	if num != nil {
		p.Num = *num
	}
	if size != nil {
		p.Size = *size
	}
	return p
}

// sortKey is a resolved sort: a whitelisted column and a direction.
type sortKey struct {
	Field string // the API field name
	Desc  bool
}

// parseSort resolves a listing's sort=<field>,<asc|desc> against the endpoint's whitelist
// (the request rule already checked the shape). An empty spec is the default.
func parseSort(spec string, whitelist map[string]string, def sortKey) (sortKey, error) {
	if spec == "" {
		return def, nil
	}
	field, dir, _ := strings.Cut(spec, ",")
	if _, ok := whitelist[field]; !ok {
		return sortKey{}, apperr.Invalid("sort", "sort.field",
			fmt.Sprintf("unknown sort field %q; one of: %s", field, strings.Join(sortedKeys(whitelist), ", ")))
	}
	return sortKey{Field: field, Desc: dir != "asc"}, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (k sortKey) dir() string {
	if k.Desc {
		return "DESC"
	}
	return "ASC"
}

// orderBy is "ORDER BY <col> <dir>, <tie> <dir>" for a whitelisted key.
func (k sortKey) orderBy(whitelist map[string]string, tie string) string {
	col := whitelist[k.Field]
	if col == tie {
		return fmt.Sprintf("ORDER BY %s %s", col, k.dir())
	}
	return fmt.Sprintf("ORDER BY %s %s, %s %s", col, k.dir(), tie, k.dir())
}

// sqlWhere builds a PostgreSQL WHERE clause with $n placeholders.
type sqlWhere struct {
	conds []string
	args  []any
}

// arg adds a value and returns its placeholder.
func (w *sqlWhere) arg(v any) string {
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

// add appends a condition; each %s in cond receives the placeholder of the next value.
func (w *sqlWhere) add(cond string, vals ...any) {
	ph := make([]any, len(vals))
	for i, v := range vals {
		ph[i] = w.arg(v)
	}
	w.conds = append(w.conds, fmt.Sprintf(cond, ph...))
}

func (w *sqlWhere) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// likePattern is a case-insensitive "contains" pattern for ILIKE (backslash escapes).
func likePattern(keyword string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(keyword) + "%"
}

// money rounds an amount to cents.
func money(v float64) float64 { return math.Round(v*100) / 100 }

// checkMoney refuses amounts the store cannot hold (the request rules already refuse
// negative and non-finite ones).
func checkMoney(field string, v float64) error {
	if v > maxMoney {
		return apperr.Invalid(field, "money.max", fmt.Sprintf("must be at most %.2f", maxMoney))
	}
	return nil
}

// truncateRunes cuts s to at most n characters.
func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// Records.

type shopRecord struct {
	ID             int64
	Name           string
	Platform       string
	PlatformShopID string
	Status         string
	CreatedAt      time.Time
}

type categoryRecord struct {
	ID        int64
	ParentID  int64
	Name      string
	Level     int32
	SortOrder int32
}

type goodsRecord struct {
	ID              int64
	ShopID          int64
	ShopName        string
	Platform        string
	PlatformGoodsID string
	Name            string
	ItemNo          string
	CategoryID      int64
	CategoryName    string
	StaffID         int64
	StaffName       string
	IsVirtual       bool
	Status          string
	Price           float64
	Cost            float64
	ImageURL        string
	DisplayOrder    int32
	CreatedAt       time.Time
	UpdatedAt       time.Time
	SKUs            []skuRecord
}

type skuRecord struct {
	ID            int64
	GoodsID       int64
	PlatformSkuID string
	Spec          string
	Price         float64
	Stock         int64
	ItemNo        string
}

type templateRecord struct {
	ID          int64
	Name        string
	Description string
	ShopID      int64
	GoodsIDs    []int64
	MetricIDs   []int64
	SortOrder   int32
	CreatedAt   time.Time
	UpdatedAt   time.Time
}
