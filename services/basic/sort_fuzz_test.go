package basic

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/apperr"
)

// sortSpecRule is the contract's sort_spec rule (common.proto), which requests pass before
// parseSort sees them.
var sortSpecRule = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63},(asc|desc)$`)

// The listings' whitelists, their default sorts and tie-break columns.
var fuzzSortLists = []struct {
	whitelist map[string]string
	def       sortKey
	tie       string
}{
	{goodsSorts, defaultGoodsSort, "g.id"},
	{categorySorts, sortKey{Field: "sort_order"}, "id"},
	{shopSorts, sortKey{Field: "id"}, "id"},
	{orderSorts, defaultOrderSort, "order_id"},
}

func (k sortKey) spec() string {
	if k.Desc {
		return k.Field + ",desc"
	}
	return k.Field + ",asc"
}

// FuzzParseSort checks parseSort on the four listings' whitelists: an empty spec is the
// default; otherwise the field before the first comma must be a whitelist key (the only
// thing ORDER BY then gets is that key's column), "asc" is ascending and anything else
// descending; a resolved key re-parses from its canonical "<field>,<asc|desc>", which is the
// spec itself when the spec passed the contract's rule.
func FuzzParseSort(f *testing.F) {
	for _, s := range []string{"name,desc", "name,asc", "price,asc", "cost,desc", "id,asc", "created_at,desc",
		"sort_order,asc", "level,desc", "platform,asc", "ordered_at,desc", "paid_amount,asc", "", "name", "name,",
		",asc", "Name,asc", "name,up", "name,asc,desc", "g.name,asc", "name;drop table x,asc", "名字,desc"} {
		for i := range fuzzSortLists {
			f.Add(s, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, spec string, list uint8) {
		l := fuzzSortLists[int(list)%len(fuzzSortLists)]
		k, err := parseSort(spec, l.whitelist, l.def)
		field, dir, _ := strings.Cut(spec, ",")
		_, known := l.whitelist[field]
		if err != nil {
			var ae *apperr.Error
			if spec == "" || known || !errors.As(err, &ae) || ae.Kind != apperr.KindInvalid {
				t.Fatalf("parseSort(%q): %v", spec, err)
			}
			if sortSpecRule.MatchString(spec) && !strings.Contains(err.Error(), field) {
				t.Fatalf("parseSort(%q): %v does not name the field", spec, err)
			}
			return
		}
		if spec == "" {
			if k != l.def {
				t.Fatalf("parseSort(\"\") = %+v, want the default %+v", k, l.def)
			}
		} else if !known || k.Field != field || k.Desc != (dir != "asc") {
			t.Fatalf("parseSort(%q) = %+v", spec, k)
		}
		col, ok := l.whitelist[k.Field]
		if !ok {
			t.Fatalf("parseSort(%q) = %+v: field outside the whitelist", spec, k)
		}
		want := "ORDER BY " + col + " " + k.dir()
		if col != l.tie {
			want += ", " + l.tie + " " + k.dir()
		}
		if got := k.orderBy(l.whitelist, l.tie); got != want {
			t.Fatalf("parseSort(%q): %q, want %q", spec, got, want)
		}
		again, err := parseSort(k.spec(), l.whitelist, l.def)
		if err != nil || again != k {
			t.Fatalf("parseSort(%q) = %+v; its spec %q re-parses to %+v, %v", spec, k, k.spec(), again, err)
		}
		if sortSpecRule.MatchString(spec) && k.spec() != spec {
			t.Fatalf("parseSort(%q) = %+v, which is %q", spec, k, k.spec())
		}
	})
}
