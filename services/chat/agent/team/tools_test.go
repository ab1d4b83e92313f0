package team_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/entities"
	"github.com/shopmind/shopmind/services/chat/agent/graph"
	"github.com/shopmind/shopmind/services/chat/agent/offline"
	"github.com/shopmind/shopmind/services/chat/agent/team"
	"github.com/shopmind/shopmind/services/chat/promotion"
	"github.com/shopmind/shopmind/services/chat/vector"
)

// The offline team's promotion expert uses search_entities, search_knowledge_graph,
// create_promotion_plan and promotion_strategy: the plan it stores targets the goods the
// analysis found falling, and the answer says so.
func TestOfflineTeamUsesEveryTool(t *testing.T) {
	db := pgtest.New(t, *chat.Service().Migrations)
	f, basic := agenttest.NewFakeAnalytics(), agenttest.NewFakeBasic()
	plans := promotion.NewStore(db.Pool)
	tools := agenttest.Tools(f)
	tools.Add(entities.NewIndex(basic, vector.NewMemory(), vector.NewHashEmbedder(256)).Tool())
	for _, tl := range promotion.Tools(plans, agenttest.GoodsOf(basic), agenttest.Clock) {
		tools.Add(tl)
	}
	tools.Add(graph.NewBuilder(basic, basic, f, plans, graph.NewPostgres(db.Pool), agenttest.Clock).Tool())
	tm := team.New(team.DefaultExperts(), team.NewOfflineRunner(f, tools, agenttest.Clock), team.Options{})
	tools.Add(tm.Tool())
	p := team.NewPlanner(offline.New(f, tools, offline.Options{Clock: agenttest.Clock}), tm, tools, offline.Model, agenttest.Clock)

	ev := agenttest.Ask(t, p, "analyse last month's goods and promotions and create a promotion plan")
	text := ev.Text()
	total, stored, err := plans.ListPlans(context.Background(), 42, promotion.PlanFilter{Limit: 10})
	if err != nil || total != 1 {
		t.Fatalf("%d plans: %v\n%s", total, err, text)
	}
	plan := stored[0]
	for _, want := range []string{"### Promotion", "- suggestion: a promotion for " + plan.ProductNames[0], "goods id ", "often bought with: ",
		"promotion plan template ", "- execution: execution ", "2 of 2 experts reported."} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	_, execs, err := plans.ListExecutions(context.Background(), 42, promotion.ExecFilter{TemplateID: plan.ID, Limit: 10})
	if err != nil || len(execs) != 1 || execs[0].Channel != "all" || plan.Status != promotion.PlanDraft || !strings.Contains(plan.AnalysisResult, plan.ProductNames[0]) {
		t.Fatalf("%+v %+v %v", plan, execs, err)
	}
	// without the words for a plan, nothing is stored
	agenttest.Ask(t, p, "analyse last month's goods and promotions")
	if total, _, _ := plans.ListPlans(context.Background(), 42, promotion.PlanFilter{Limit: 10}); total != 1 {
		t.Fatalf("%d plans", total)
	}
}
