package listing

import (
	"testing"

	"github.com/shopmind/shopmind/internal/apperr"
)

func TestPageOf(t *testing.T) {
	if p := PageOf(nil, nil); p.Num != 1 || p.Size != 10 || p.Offset() != 0 {
		t.Fatalf("defaults: %+v", p)
	}
	n, s := int32(3), int32(20)
	if p := PageOf(&n, &s); p.Offset() != 40 {
		t.Fatalf("offset: %+v %d", p, p.Offset())
	}
}

func TestParseSort(t *testing.T) {
	wl := map[string]string{"created_at": "created_at", "level": "level_rank", "id": "id"}
	s, err := ParseSort("", wl, "created_at", true)
	if err != nil || s.OrderBy("id") != "ORDER BY created_at DESC, id DESC" {
		t.Fatalf("default: %v %q", err, s.OrderBy("id"))
	}
	s, err = ParseSort("level,asc", wl, "created_at", true)
	if err != nil || s.OrderBy("id") != "ORDER BY level_rank ASC, id ASC" {
		t.Fatalf("level: %v %q", err, s.OrderBy("id"))
	}
	s, _ = ParseSort("id,desc", wl, "created_at", true)
	if s.OrderBy("id") != "ORDER BY id DESC" {
		t.Fatalf("id: %q", s.OrderBy("id"))
	}
	_, err = ParseSort("password,asc", wl, "created_at", true)
	var ae *apperr.Error
	if err == nil || !asApp(err, &ae) || ae.Kind != apperr.KindInvalid || ae.Violations[0].Field != "sort" {
		t.Fatalf("unknown field: %v", err)
	}
}

func asApp(err error, out **apperr.Error) bool {
	e, ok := err.(*apperr.Error)
	*out = e
	return ok
}

func TestWhereAndContains(t *testing.T) {
	w := &Where{}
	if w.SQL() != "" {
		t.Fatal("empty where")
	}
	w.Add("tenant_id = %s", int64(1))
	w.Add("(a ILIKE %s OR b ILIKE %s)", Contains("50%_x\\"), Contains("y"))
	if w.SQL() != " WHERE tenant_id = $1 AND (a ILIKE $2 OR b ILIKE $3)" || len(w.Args) != 3 {
		t.Fatalf("%q %v", w.SQL(), w.Args)
	}
	if w.Args[1] != `%50\%\_x\\%` {
		t.Fatalf("pattern %q", w.Args[1])
	}
}
