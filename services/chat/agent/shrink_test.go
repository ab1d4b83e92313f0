package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shopmind/shopmind/services/chat/agent"
)

func TestShrinkJSONKeepsStructure(t *testing.T) {
	type node struct {
		ID    int    `json:"id"`
		Name  string `json:"name"`
		Props string `json:"props"`
	}
	var nodes []node
	for i := 0; i < 300; i++ {
		nodes = append(nodes, node{ID: i, Name: fmt.Sprintf("商品 %d", i), Props: strings.Repeat("属性", 20)})
	}
	doc, _ := json.Marshal(map[string]any{"nodes": nodes, "edges": [][]int{{1, 2}, {2, 3}}, "query": "MATCH (n) RETURN n"})
	for _, max := range []int{8000, 2000, 300} {
		out, ok := agent.ShrinkJSON(string(doc), max)
		if !ok || utf8.RuneCountInString(out) > max {
			t.Fatalf("max %d: ok=%v len=%d", max, ok, utf8.RuneCountInString(out))
		}
		var got struct {
			Nodes   []node  `json:"nodes"`
			Omitted int     `json:"nodes_omitted"`
			Edges   [][]int `json:"edges"`
			Query   string  `json:"query"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("max %d: not JSON: %v\n%s", max, err, out)
		}
		if len(got.Nodes) == 0 || len(got.Nodes)+got.Omitted != 300 || got.Nodes[0].ID != 0 || got.Query != "MATCH (n) RETURN n" {
			t.Fatalf("max %d: %d nodes + %d omitted, %+v", max, len(got.Nodes), got.Omitted, got)
		}
	}
	// a top-level list ends with the count left out
	list, _ := json.Marshal(nodes)
	out, ok := agent.ShrinkJSON(string(list), 1000)
	var items []any
	if !ok || json.Unmarshal([]byte(out), &items) != nil || !strings.Contains(items[len(items)-1].(string), "more items left out") {
		t.Fatalf("%v %s", ok, out)
	}
	// a short document is unchanged; text is not JSON
	if s, ok := agent.ShrinkJSON(`{"a":1}`, 100); !ok || s != `{"a":1}` {
		t.Fatal(s)
	}
	if _, ok := agent.ShrinkJSON(strings.Repeat("x", 200), 100); ok {
		t.Fatal("text taken as JSON")
	}
	// one long string
	out, ok = agent.ShrinkJSON(`{"text":"`+strings.Repeat("销", 500)+`"}`, 100)
	if !ok || !json.Valid([]byte(out)) || utf8.RuneCountInString(out) > 100 {
		t.Fatal(out)
	}
}

func TestRegistryShortensJSONResults(t *testing.T) {
	var rows []any
	for i := 0; i < 2000; i++ {
		rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("node %d", i)})
	}
	r := agent.NewRegistry(0, &jsonTool{out: map[string]any{"nodes": rows}})
	content, _, err := r.Run(context.Background(), nil, "json_tool", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(content), &got); err != nil || utf8.RuneCountInString(content) > agent.DefaultToolResultMaxChars {
		t.Fatalf("%v %d", err, len(content))
	}
	if n := len(got["nodes"].([]any)); n == 0 || int(got["nodes_omitted"].(float64))+n != 2000 {
		t.Fatalf("%v", got["nodes_omitted"])
	}
}

type jsonTool struct{ out any }

func (j *jsonTool) Name() string              { return "json_tool" }
func (j *jsonTool) Description() string       { return "json" }
func (j *jsonTool) Parameters() *agent.Schema { return agent.Object(nil) }
func (j *jsonTool) Call(context.Context, *agent.ToolEnv, json.RawMessage) (*agent.ToolResult, error) {
	return &agent.ToolResult{JSON: j.out}, nil
}
