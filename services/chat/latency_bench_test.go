package chat_test

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
)

// conversations is how many conversations send at once in the latency benchmark.
const conversations = 16

// BenchmarkChatLatency measures, under 16 concurrent conversations, the time from sending a
// message to its first streamed token (the first chunk with content) and to pipeline_end,
// for the offline analyst (no model configured) and for the LLM agent against a scripted
// model (llmtest: an OpenAI-compatible server answering at once, so what is measured is
// ShopMind's own path). Each iteration is one message in each of the 16 conversations;
// p50/p99 over all messages are reported as ttft-p50-ms, ttft-p99-ms, end-p50-ms,
// end-p99-ms. Budgets and figures: CHAT.md.
func BenchmarkChatLatency(b *testing.B) {
	for _, mode := range []string{"offline", "scripted"} {
		b.Run(mode, func(b *testing.B) {
			var opts []stack.Option
			var model *llmtest.Server
			if mode == "scripted" {
				model = llmtest.New(b)
				env := map[string]string{"SHOPMIND_LLM_BASE_URL": model.URL + "/v1", "SHOPMIND_LLM_MODEL": "scripted"}
				opts = append(opts, func(c *app.Config) {
					cc, _ := chat.LoadConfig(func(k string) string { return env[k] })
					c.Services["chat"] = &cc
				})
			}
			st := stack.StartTargets(b, stack.NewDatabase(b), "tenant,chat,analysis", opts...)
			login, err := tenantv1.NewTenantAuthServiceClient(st.Conn).Login(context.Background(),
				&tenantv1.LoginRequest{TenantCode: "demo", Username: "admin", Password: stack.AdminPassword})
			if err != nil {
				b.Fatal(err)
			}
			ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+login.GetAccessToken())
			c := chatv2.NewChatServiceClient(st.Conn)
			convs := make([]string, conversations)
			var mu sync.Mutex
			var ttft, end []time.Duration
			send := func(i int) error {
				if model != nil {
					model.Add(llmtest.Reply{Text: []string{"GMV ", "was ", "42 ", "yesterday."}})
				}
				t0 := time.Now()
				stream, err := c.SendMessage(ctx, &chatv2.SendMessageRequest{Message: "What was GMV yesterday?", ConversationId: convs[i]})
				if err != nil {
					return err
				}
				var first, last time.Duration
				for {
					ev, err := stream.Recv()
					if err == io.EOF {
						break
					}
					if err != nil {
						return err
					}
					if convs[i] == "" {
						convs[i] = ev.GetConversationId()
					}
					if first == 0 {
						for _, ch := range ev.GetChunk().GetChoices() {
							if ch.GetDelta().GetContent() != "" {
								first = time.Since(t0)
							}
						}
					}
					if ev.GetType() == "pipeline_end" {
						last = time.Since(t0)
					}
				}
				mu.Lock()
				if first > 0 {
					ttft = append(ttft, first)
				}
				if last > 0 {
					end = append(end, last)
				}
				mu.Unlock()
				return nil
			}
			for i := range conversations { // the conversations exist before the clock starts
				if err := send(i); err != nil {
					b.Fatal(err)
				}
			}
			ttft, end = nil, nil
			b.ResetTimer()
			for b.Loop() {
				var wg sync.WaitGroup
				errs := make(chan error, conversations)
				for i := range conversations {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := send(i); err != nil {
							errs <- err
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			report := func(name string, d []time.Duration) {
				if len(d) == 0 {
					b.Fatalf("no %s measured", name)
				}
				slices.Sort(d)
				b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, name+"-p50-ms")
				b.ReportMetric(float64(d[min(len(d)-1, len(d)*99/100)].Microseconds())/1000, name+"-p99-ms")
			}
			report("ttft", ttft)
			report("end", end)
		})
	}
}
