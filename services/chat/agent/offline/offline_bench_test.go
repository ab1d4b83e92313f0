package offline

import (
	"context"
	"errors"
	"testing"
	"time"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
)

var errFirst = errors.New("first event")

// BenchmarkOfflineFirstEvent measures the time from Answer to the first event of the
// offline analyst (goal < 200 ms) with the in-process fake analysis service.
func BenchmarkOfflineFirstEvent(b *testing.B) {
	a := newTestAnalyst(agenttest.NewFakeAnalytics())
	req := &agent.Request{Identity: agenttest.Identity(), ConversationID: "c-1", Message: "What was GMV by shop last 7 days?"}
	var total time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		err := a.Answer(context.Background(), req, func(*chatv2.SendMessageResponse) error {
			total += time.Since(start)
			return errFirst // stop after the first event
		})
		if !errors.Is(err, errFirst) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/first-event")
}

// BenchmarkOfflineWholeAnswer measures a whole answer (3 previews on the fake).
func BenchmarkOfflineWholeAnswer(b *testing.B) {
	a := newTestAnalyst(agenttest.NewFakeAnalytics())
	for _, q := range []string{"What was GMV by shop last 7 days?", "上个月各类目的销售额是多少"} {
		b.Run(q, func(b *testing.B) {
			req := &agent.Request{Identity: agenttest.Identity(), ConversationID: "c-1", Message: q}
			for b.Loop() {
				if err := a.Answer(context.Background(), req, func(*chatv2.SendMessageResponse) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseQuestion measures the question parser alone.
func BenchmarkParseQuestion(b *testing.B) {
	metrics := agent.MetricInfos(agenttest.DemoMetricDefs())
	for b.Loop() {
		ParseQuestion("上个月各类目的销售额是多少", agenttest.Now, metrics, nil)
	}
}
