//go:build platform

// Package extension runs the browser extension's suite (extension/test) in Debian's chromium
// against the whole platform: the extension built into the binary (internal/crxbundle, the
// files the platform serves as its download), loaded unpacked, signing in through its popup,
// collecting from local pages that imitate a merchant back office and uploading through a
// proxy of the suite's that counts batches and injects faults. The toolchain comes from
// scripts/extension-deps.sh (run by scripts/test-deps.sh); a missing tool fails the test.
// The suite asks the production chat (the offline analyst) about the values the extension
// uploaded; afterwards the platform is restarted on the same database with the scripted
// OpenAI-compatible fake as the model, which calls search_entities for the page the
// extension captured (the offline analyst never calls that tool).
package extension

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
	"github.com/shopmind/shopmind/services/crx"
)

func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func TestExtensionInChromium(t *testing.T) {
	for _, tool := range []string{"node", "chromium"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: run scripts/test-deps.sh", tool)
		}
	}
	root := repoRoot(t)
	ext := filepath.Join(root, "extension")
	if _, err := os.Stat(filepath.Join(ext, "node_modules", "playwright-core")); err != nil {
		t.Fatal("extension/node_modules is missing: run scripts/extension-deps.sh (scripts/test-deps.sh runs it)")
	}
	// A newer release exists (1.1.0) while the built one (the manifest's) is still accepted:
	// the popup shows the update notice.
	// The captcha as in production (on failure; the stack turns it off by default), so the
	// popup's captcha is exercised.
	platformConfig := func(c *app.Config) {
		c.CaptchaMode = "on-failure"
		cfg := app.ServiceConfig[crx.Config](c, "crx")
		cfg.LatestVersion, cfg.MinVersion = "1.1.0", crx.DefaultLatestVersion
	}
	s := stack.Start(t, platformConfig)
	admin := s.DemoAdmin(t)
	shop := stack.AddShop(t, s.DB, admin.Tenant, "Back office shop", "taobao", "tb-ext-1")
	out := filepath.Join(ext, "test-output")
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "--test-concurrency=1", "test/")
	cmd.Dir = ext
	cmd.Env = append(os.Environ(),
		"SHOPMIND_URL="+s.BaseURL, "SHOPMIND_TENANT=demo", "SHOPMIND_USER=admin", "SHOPMIND_PASSWORD="+stack.AdminPassword,
		"SHOPMIND_ADMIN_TOKEN="+admin.Token, "SHOPMIND_SHOP_ID="+strconv.FormatInt(shop, 10),
		"EXTENSION_DIR="+filepath.Join(root, "internal", "crxbundle", "dist"), "TEST_OUTPUT="+out)
	b, err := cmd.CombinedOutput()
	t.Logf("extension suite (screenshots in %s):\n%s", out, b)
	if err != nil {
		t.Fatalf("extension suite failed: %v", err)
	}

	// The page the suite captured through the extension ("Competitor report zebrafinch", a
	// table with "Blue kettle") is found by the chat's search_entities tool: the platform
	// restarted on the same database with a model (the scripted fake) that calls the tool;
	// the tool runs for real against crx as the signed-in administrator.
	s.Stop()
	fake := llmtest.New(t)
	s = stack.StartOn(t, s.DB, platformConfig, func(c *app.Config) {
		cc := app.ServiceConfig[chat.Config](c, "chat")
		cc.LLM.BaseURL, cc.LLM.MaxRetries = fake.BaseURL(), 0
	})
	token := s.Admin(t).Access
	find := func(query string, kinds ...string) string {
		t.Helper()
		args := map[string]any{"query": query, "top_k": 5}
		if len(kinds) > 0 {
			args["kinds"] = kinds
		}
		b, _ := json.Marshal(args)
		fake.Add(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "x1", Type: "function", Function: llm.FunctionCall{Name: "search_entities", Arguments: string(b)}}}},
			llmtest.Reply{Text: []string{"found"}})
		req, _ := http.NewRequest("POST", s.BaseURL+"/api/v2/chat/message", strings.NewReader(`{"message":"find the competitor report I captured"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(res.Body) // the stream, to its end
		_ = res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || !strings.Contains(string(raw), "data: [DONE]") {
			t.Fatalf("chat stream: %d %v\n%s", res.StatusCode, err, raw)
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
	}
	for _, q := range []struct {
		query string
		kinds []string
	}{{"zebrafinch", []string{"adhoc"}}, {"competitor prices blue kettle", nil}} {
		res := find(q.query, q.kinds...)
		var got found
		if err := json.Unmarshal([]byte(res), &got); err != nil {
			t.Fatalf("%q: %v %s", q.query, err, res)
		}
		ok := false
		for _, e := range got.Entities {
			ok = ok || e.Kind == "adhoc" && e.Name == "Competitor report zebrafinch" &&
				strings.HasSuffix(e.PageURL, "/backoffice/report") && strings.Contains(e.Captured, "Blue kettle")
		}
		if !ok {
			t.Fatalf("search_entities %q does not find the captured page: %s", q.query, res)
		}
	}
}
