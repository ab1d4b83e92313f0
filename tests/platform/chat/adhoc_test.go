//go:build platform

package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
	"github.com/shopmind/shopmind/services/tenant"
)

// TestSearchEntitiesFindsAdhocPages: a page the extension captured (POST
// /api/v1/data/crx/adhoc through the gateway) is found by search_entities at the uploader's
// next chat message, by a captured field's words; a colleague of the same tenant without
// administrator rights does not find it, the tenant's administrator does, another tenant
// never; a second upload is found at the next message (the model is the scripted fake, the
// index reads the real crx service as the asking user).
func TestSearchEntitiesFindsAdhocPages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole platform")
	}
	fake := llmtest.New(t)
	s := stack.Start(t, func(c *app.Config) {
		cc := app.ServiceConfig[chat.Config](c, "chat")
		cc.LLM.BaseURL, cc.LLM.MaxRetries = fake.BaseURL(), 0
	})
	admin := s.Admin(t).Access

	// two users of tenant demo who may capture pages and chat, but are not administrators
	role := decode[struct {
		Role struct {
			ID string `json:"id"`
		} `json:"role"`
	}](t, expect(t, s, "POST", "/tenant/api/v1/tenant/roles", `{"code":"pages","name":"Page capture",
		"permission_codes":["crx:data:adhoc","chat:message:send"]}`, admin, 0, `"code":"pages"`)).Role.ID
	const password = "Page-Capture-2040"
	for _, name := range []string{"page.owner", "page.peer"} {
		expect(t, s, "POST", "/tenant/api/v1/tenant-m/users", fmt.Sprintf(`{"username":%q,"password":%q,"role_ids":[%s]}`, name, password, role),
			admin, 0, name)
	}
	owner := s.Login(t, "demo", "page.owner", password).Access
	peer := s.Login(t, "demo", "page.peer", password).Access
	if _, err := tenant.CreateTenant(context.Background(), s.DB.Pool, tenant.NewTenant{Code: "rival", Name: "Rival",
		AdminUsername: "boss", AdminPassword: "Rival-Boss-2040"}, 4); err != nil {
		t.Fatal(err)
	}
	rival := s.Login(t, "rival", "boss", "Rival-Boss-2040").Access

	upload := func(token, clientID, title, url, data string) {
		t.Helper()
		expect(t, s, "POST", "/api/v1/data/crx/adhoc", fmt.Sprintf(`{"client_id":%q,"page_url":%q,"page_title":%q,"platform":"jd",
			"collected_at":"2026-03-01T08:00:00Z","data":%s}`, clientID, url, title, data), token, 0, `"id"`)
	}
	// find asks as token; the model calls search_entities with query; it returns the tool's
	// result as the model received it
	find := func(token, query string, kinds ...string) string {
		t.Helper()
		args := map[string]any{"query": query, "top_k": 5}
		if len(kinds) > 0 {
			args["kinds"] = kinds
		}
		fake.Add(llmtest.Reply{ToolCalls: []llm.ToolCall{toolCall("a1", "search_entities", args)}}, llmtest.Reply{Text: []string{"ok"}})
		if got := textOf(t, func() []map[string]any {
			_, ev := stream(t, s, "/api/v2/chat/message", `{"message":"find the page I captured"}`, token)
			return ev
		}()); got != "ok" {
			t.Fatalf("answer %q", got)
		}
		reqs := fake.Requests()
		msgs := reqs[len(reqs)-1].Messages
		if last := msgs[len(msgs)-1]; last.Role == "tool" {
			return last.Content
		}
		t.Fatalf("no tool result in %+v", msgs)
		return ""
	}
	type found struct {
		Entities []struct {
			Kind     string `json:"kind"`
			Name     string `json:"name"`
			PageURL  string `json:"page_url"`
			Captured string `json:"captured"`
		} `json:"entities"`
		Note string `json:"note"`
	}
	has := func(result, title string) bool {
		for _, e := range decode[found](t, json.RawMessage(result)).Entities {
			if e.Kind == "adhoc" && e.Name == title {
				return true
			}
		}
		return false
	}

	const parka = "Competitor parka listing ZX-81"
	upload(owner, "0d6f6a55-7a43-4a57-9a4e-0a2c3b1d8e01", parka, "https://item.jd.com/881.html",
		`{"price":1299,"seller":"Borealis Outfitters","specs":{"fill":"goose down"}}`)
	// the same client id in the rival tenant is the rival's own record, with its own words
	upload(rival, "0d6f6a55-7a43-4a57-9a4e-0a2c3b1d8e01", "Rival copy of a parka page", "https://item.jd.com/882.html",
		`{"seller":"Borealis Outfitters"}`)

	res := find(owner, "Borealis Outfitters", "adhoc")
	var got found
	if err := json.Unmarshal([]byte(res), &got); err != nil || len(got.Entities) == 0 || got.Entities[0].Name != parka ||
		got.Entities[0].PageURL != "https://item.jd.com/881.html" || !strings.Contains(got.Entities[0].Captured, "seller: Borealis Outfitters") {
		t.Fatalf("the uploader's search: %v %s", err, res)
	}
	if strings.Contains(res, "Rival copy") {
		t.Fatalf("another tenant's page: %s", res)
	}
	// all kinds at once: the page is found among the basic data
	if res := find(owner, "goose down parka ZX-81"); !has(res, parka) {
		t.Fatalf("all kinds: %s", res)
	}
	// a colleague who is not an administrator: not theirs, not found
	if res := find(peer, "Borealis Outfitters", "adhoc"); has(res, parka) {
		t.Fatalf("a colleague sees the uploader's page: %s", res)
	}
	// the tenant's administrator sees the tenant's pages (as crx's listing shows them)
	if res := find(admin, "Borealis Outfitters", "adhoc"); !has(res, parka) || strings.Contains(res, "Rival copy") {
		t.Fatalf("the administrator: %s", res)
	}
	// the other tenant's administrator finds its own page, never demo's
	if res := find(rival, "Competitor parka listing ZX-81 Borealis goose down"); has(res, parka) || !has(res, "Rival copy of a parka page") {
		t.Fatalf("the rival tenant: %s", res)
	}
	// a second upload is found at the next message
	const gloves = "Thermal gloves offer QW-7"
	if res := find(owner, "thermal gloves QW-7", "adhoc"); has(res, gloves) {
		t.Fatalf("found before the upload: %s", res)
	}
	upload(owner, "0d6f6a55-7a43-4a57-9a4e-0a2c3b1d8e02", gloves, "https://item.jd.com/883.html", `{"price":89}`)
	if res := find(owner, "thermal gloves QW-7", "adhoc"); !has(res, gloves) {
		t.Fatalf("after the upload: %s", res)
	}
}
