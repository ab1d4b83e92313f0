package entities

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/listing"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/vector"
)

// fakeAdhoc lists records as crx's ListAdhoc does: the caller's tenant, the caller's own
// records unless an administrator, newest first; users in deny are refused.
type fakeAdhoc struct {
	mu      sync.Mutex
	records []*crxv1.AdhocRecord
	tenants map[int64]int64 // record id -> tenant
	deny    map[int64]bool
	fail    error
	calls   int
}

func (f *fakeAdhoc) add(tenant, user, id int64, title, url string, data map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := structpb.NewStruct(data)
	if err != nil {
		panic(err)
	}
	if f.tenants == nil {
		f.tenants = map[int64]int64{}
	}
	f.tenants[id] = tenant
	f.records = append(f.records, &crxv1.AdhocRecord{Id: id, UserId: user, PageTitle: title, PageUrl: url, Platform: "jd", Data: st,
		CollectedAt: timestamppb.New(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))})
}

func (f *fakeAdhoc) ListAdhoc(ctx context.Context, req *crxv1.ListAdhocRequest) (*crxv1.ListAdhocResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	id := authn.FromContext(ctx)
	if id == nil {
		return nil, status.Error(codes.Unauthenticated, "no token")
	}
	if f.fail != nil {
		return nil, f.fail
	}
	if f.deny[id.UserID] {
		return nil, status.Error(codes.PermissionDenied, "missing permission crx:data:adhoc")
	}
	var mine []*crxv1.AdhocRecord
	for _, r := range f.records {
		if f.tenants[r.GetId()] == id.TenantID && (id.IsAdmin || r.GetUserId() == id.UserID) {
			mine = append(mine, r)
		}
	}
	slices.SortFunc(mine, func(a, b *crxv1.AdhocRecord) int { return int(b.GetId() - a.GetId()) })
	p := listing.PageOf(req.PageNum, req.PageSize)
	from := min(int(p.Offset()), len(mine))
	to := min(from+int(p.Size), len(mine))
	return &crxv1.ListAdhocResponse{Items: mine[from:to], Total: int64(len(mine)), PageNum: p.Num, PageSize: p.Size}, nil
}

func searchAs(t *testing.T, reg *agent.Registry, id *authn.Identity, args string) ([]Entity, string) {
	t.Helper()
	ctx := authn.WithIdentity(context.Background(), id)
	content, _, err := reg.Run(ctx, &agent.ToolEnv{Request: &agent.Request{Identity: id}}, ToolName, args)
	if err != nil {
		t.Fatalf("%s: %v: %s", args, err, content)
	}
	var out struct {
		Entities []Entity `json:"entities"`
		Note     string   `json:"note"`
	}
	if err := json.Unmarshal([]byte(content), &out); err != nil {
		t.Fatal(err)
	}
	return out.Entities, out.Note
}

func user(tenant, id int64, admin bool) *authn.Identity {
	u := agenttest.Identity()
	u.TenantID, u.UserID, u.IsAdmin = tenant, id, admin
	return u
}

func TestSearchAdhocPages(t *testing.T) {
	src := &fakeAdhoc{deny: map[int64]bool{13: true}}
	src.add(42, 7, 1, "Competitor parka listing", "https://item.jd.com/100.html",
		map[string]any{"price": 1299.0, "seller": "Northwind Outfitters", "specs": map[string]any{"fill": "goose down"}})
	src.add(42, 8, 2, "Colleague's private sheet", "https://item.jd.com/200.html", map[string]any{"note": "velvet slippers plan"})
	src.add(7, 1, 3, "Other tenant page", "https://item.jd.com/300.html", map[string]any{"seller": "Northwind Outfitters"})
	basic := agenttest.NewFakeBasic()
	x := NewIndex(basic, vector.NewMemory(), vector.NewHashEmbedder(256)).WithAdhoc(src, vector.NewMemory())
	reg := agent.NewRegistry(0, x.Tool())
	adhocOnly := func(args string) string { return strings.Replace(args, "{", `{"kinds":["adhoc"],`, 1) }

	// the uploader finds the page by its title, its URL and a captured field
	me := user(42, 7, false)
	for _, q := range []string{"competitor parka", "item.jd.com/100", "Northwind Outfitters", "goose down"} {
		got, _ := searchAs(t, reg, me, adhocOnly(`{"query":"`+q+`","top_k":1}`))
		if len(got) != 1 || got[0].Kind != KindAdhoc || got[0].ID != 1 || got[0].Name != "Competitor parka listing" ||
			got[0].PageURL != "https://item.jd.com/100.html" || !strings.Contains(got[0].Captured, "specs.fill: goose down") ||
			got[0].Platform != "jd" || got[0].CollectedAt != "2026-03-01T00:00:00Z" {
			t.Fatalf("%q: %+v", q, got)
		}
	}
	// all kinds together: the page ranks among the basic data
	if got, _ := searchAs(t, reg, me, `{"query":"Competitor parka listing","top_k":3}`); len(got) == 0 || got[0].Kind != KindAdhoc {
		t.Fatalf("all kinds: %+v", got)
	}
	// another user of the tenant does not see the uploader's pages, the administrator does
	for _, e := range func() []Entity {
		got, _ := searchAs(t, reg, user(42, 8, false), adhocOnly(`{"query":"Competitor parka","top_k":20}`))
		return got
	}() {
		if e.ID == 1 {
			t.Fatalf("another user sees the page: %+v", e)
		}
	}
	if got, _ := searchAs(t, reg, user(42, 8, false), adhocOnly(`{"query":"velvet slippers","top_k":1}`)); len(got) != 1 || got[0].ID != 2 {
		t.Fatalf("user 8's own page: %+v", got)
	}
	admin := user(42, 1, true)
	if got, _ := searchAs(t, reg, admin, adhocOnly(`{"query":"velvet slippers","top_k":1}`)); len(got) != 1 || got[0].ID != 2 {
		t.Fatalf("administrator: %+v", got)
	}
	// the uploader still never sees the colleague's page, although the administrator's
	// search put it in the tenant's store
	for _, e := range func() []Entity {
		got, _ := searchAs(t, reg, me, adhocOnly(`{"query":"velvet slippers","top_k":20}`))
		return got
	}() {
		if e.ID == 2 {
			t.Fatalf("the uploader sees a colleague's page: %+v", e)
		}
	}
	// another tenant never: neither its administrator nor a search by the same words
	for _, e := range func() []Entity {
		got, _ := searchAs(t, reg, user(7, 1, true), `{"query":"Competitor parka listing Northwind","top_k":20}`)
		return got
	}() {
		if e.Kind == KindAdhoc && e.ID != 3 {
			t.Fatalf("tenant 7 sees tenant 42's page: %+v", e)
		}
	}
	// a user crx refuses the listing finds no pages, and the search does not fail
	if got, note := searchAs(t, reg, user(42, 13, false), `{"query":"Competitor parka listing","top_k":5}`); note != "" || slices.ContainsFunc(got, func(e Entity) bool { return e.Kind == KindAdhoc }) {
		t.Fatalf("refused user: %+v %q", got, note)
	}

	// kept fresh: a new upload is found at the next search; an unchanged listing costs one
	// call of one row
	src.add(42, 7, 4, "Thermal gloves offer", "https://item.jd.com/400.html", map[string]any{"price": 89.0})
	if got, _ := searchAs(t, reg, me, adhocOnly(`{"query":"thermal gloves","top_k":1}`)); len(got) != 1 || got[0].ID != 4 {
		t.Fatalf("new upload: %+v", got)
	}
	before := src.calls
	searchAs(t, reg, me, adhocOnly(`{"query":"thermal gloves","top_k":1}`))
	if src.calls != before+1 {
		t.Fatalf("an unchanged listing made %d calls", src.calls-before)
	}
	// a record committed late under a lower id than one already seen is still indexed
	src.add(42, 7, 0, "Late committed heater page", "https://item.jd.com/0.html", map[string]any{})
	if got, _ := searchAs(t, reg, me, adhocOnly(`{"query":"late committed heater","top_k":1}`)); len(got) != 1 || got[0].ID != 0 {
		t.Fatalf("late record: %+v", got)
	}

	// basic refusing the user (no goods permission): the pages are still searched
	basic.Fail = status.Error(codes.PermissionDenied, "missing permission basic:goods:list")
	if got, note := searchAs(t, reg, me, `{"query":"Competitor parka listing","top_k":3}`); len(got) == 0 || got[0].ID != 1 ||
		!strings.Contains(note, "basic:goods:list") {
		t.Fatalf("basic refused: %+v %q", got, note)
	}
	// refused by both: the basic data's refusal is the tool's error
	if content, _, err := reg.Run(authn.WithIdentity(context.Background(), user(42, 13, false)),
		&agent.ToolEnv{Request: &agent.Request{Identity: user(42, 13, false)}}, ToolName, `{"query":"coat"}`); err == nil ||
		agenttest.ErrorMessage(t, content) != "missing permission basic:goods:list" {
		t.Fatalf("refused by both: %v %s", err, content)
	}
	basic.Fail = nil

	// crx failing: the basic data is still searched and the result says pages were not
	src.fail = status.Error(codes.Unavailable, "crx unavailable")
	got, note := searchAs(t, reg, me, `{"query":"wool coat","top_k":1}`)
	if len(got) != 1 || got[0].Kind != "goods" || !strings.Contains(note, "crx unavailable") {
		t.Fatalf("crx down: %+v %q", got, note)
	}
	// only pages asked for: the failure is the tool's error
	ctx := authn.WithIdentity(context.Background(), me)
	content, _, err := reg.Run(ctx, &agent.ToolEnv{Request: &agent.Request{Identity: me}}, ToolName, adhocOnly(`{"query":"gloves"}`))
	if err == nil || !strings.Contains(agenttest.ErrorMessage(t, content), "crx unavailable") {
		t.Fatalf("%v %s", err, content)
	}
}

// TestAdhocRetriedAfterStoreFailure: records whose texts did not reach the store are
// embedded again at the next search.
func TestAdhocRetriedAfterStoreFailure(t *testing.T) {
	src := &fakeAdhoc{}
	src.add(42, 7, 1, "Down jacket benchmark", "https://item.jd.com/1.html", map[string]any{"price": 10.0})
	store := &failingStore{Store: vector.NewMemory(), fail: errors.New("disk full")}
	x := NewIndex(agenttest.NewFakeBasic(), vector.NewMemory(), vector.NewHashEmbedder(64)).WithAdhoc(src, store)
	ctx := authn.WithIdentity(context.Background(), user(42, 7, false))
	v := Viewer{TenantID: 42, UserID: 7}
	if _, err := x.Search(ctx, v, "down jacket", 1, KindAdhoc); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatal(err)
	}
	store.fail = nil
	got, err := x.Search(ctx, v, "down jacket", 1, KindAdhoc)
	if err != nil || len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("%+v %v", got, err)
	}
}

type failingStore struct {
	vector.Store
	fail error
}

func (s *failingStore) Upsert(ctx context.Context, tenantID int64, items []vector.Item) error {
	if s.fail != nil {
		return s.fail
	}
	return s.Store.Upsert(ctx, tenantID, items)
}

func TestFieldTexts(t *testing.T) {
	st, _ := structpb.NewStruct(map[string]any{"b": []any{"x", 2.5}, "a": map[string]any{"z": true, "y": nil}, "c": "plain"})
	got := FieldTexts(st)
	want := []string{"a.z: true", "b: x", "b: 2.5", "c: plain"}
	if !slices.Equal(got, want) {
		t.Fatalf("%q", got)
	}
}
