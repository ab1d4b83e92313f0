package chat_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract tests: the chat service's RPCs through the generated clients, on the gRPC
// server only (no gateway, no WAF), with the agent the configuration gives (offline: no
// LLM is configured). They assert codes and fields, never timings.

const missingSession = "7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77"

func TestContractSessions(t *testing.T) {
	s := stack.StartServices(t, "chat", "analysis")
	c := chatv1.NewSessionServiceClient(s.Conn)

	created, err := c.CreateSession(s.Admin, &chatv1.CreateSessionRequest{})
	if err != nil || created.GetConversationId() == "" || created.GetStatus() != "active" {
		t.Fatalf("CreateSession: %v %v", created, err)
	}
	id := created.GetConversationId()
	got, err := c.GetSession(s.Admin, &chatv1.GetSessionRequest{ConversationId: id})
	if err != nil || got.GetSession().GetId() != id || got.GetSession().GetMessageCount() != 0 || len(got.GetRecentMessages()) != 0 {
		t.Fatalf("GetSession: %v %v", got, err)
	}
	title := "Weekly sales"
	upd, err := c.UpdateSession(s.Admin, &chatv1.UpdateSessionRequest{Id: id, Title: &title,
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"title"}}})
	if err != nil || upd.GetSession().GetTitle() != title || upd.GetSession().GetStatus() != "active" {
		t.Fatalf("UpdateSession: %v %v", upd, err)
	}
	list, err := c.ListSessions(s.Admin, &chatv1.ListSessionsRequest{})
	if err != nil || list.GetTotal() != 1 || len(list.GetSessions()) != 1 || list.GetSessions()[0].GetTitle() != title {
		t.Fatalf("ListSessions: %v %v", list, err)
	}

	// 400: the field is named in the BadRequest details.
	_, err = c.GetSession(s.Admin, &chatv1.GetSessionRequest{ConversationId: "not-a-uuid"})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "conversation_id") {
		t.Fatalf("GetSession of a malformed id: want InvalidArgument naming conversation_id, got %v (%v)", err, stack.Violations(err))
	}
	limit := int32(0)
	_, err = c.ListSessions(s.Admin, &chatv1.ListSessionsRequest{Limit: &limit})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "limit") {
		t.Fatalf("ListSessions limit 0: want InvalidArgument naming limit, got %v (%v)", err, stack.Violations(err))
	}

	// 404.
	if _, err := c.GetSession(s.Admin, &chatv1.GetSessionRequest{ConversationId: missingSession}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetSession of a missing session: want NotFound, got %v", err)
	}
	del, err := c.DeleteSession(s.Admin, &chatv1.DeleteSessionRequest{Id: id})
	if err != nil || del.GetStatus() != "success" {
		t.Fatalf("DeleteSession: %v %v", del, err)
	}
	if _, err := c.ListSessionMessages(s.Admin, &chatv1.ListSessionMessagesRequest{ConversationId: id}); status.Code(err) != codes.NotFound {
		t.Fatalf("ListSessionMessages of a deleted session: want NotFound, got %v", err)
	}

	// Auth required.
	if _, err := c.ListSessions(context.Background(), &chatv1.ListSessionsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListSessions without a token: want Unauthenticated, got %v", err)
	}
}

// recv reads a server stream to its end, returning the events and the final error (nil
// for a clean end).
func recv(stream interface {
	Recv() (*chatv2.SendMessageResponse, error)
}) ([]*chatv2.SendMessageResponse, error) {
	var events []*chatv2.SendMessageResponse
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
}

func TestContractSendMessage(t *testing.T) {
	s := stack.StartServices(t, "chat", "analysis")
	c := chatv2.NewChatServiceClient(s.Conn)

	stream, err := c.SendMessage(s.Admin, &chatv2.SendMessageRequest{Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	events, err := recv(stream)
	if err != nil || len(events) == 0 {
		t.Fatalf("SendMessage: %d events, %v", len(events), err)
	}
	conv := events[0].GetConversationId()
	if conv == "" || events[len(events)-1].GetDone() == nil {
		t.Fatalf("SendMessage: want a conversation id and a final done event, got %v", events)
	}
	msgs, err := chatv1.NewSessionServiceClient(s.Conn).ListSessionMessages(s.Admin, &chatv1.ListSessionMessagesRequest{ConversationId: conv})
	if err != nil || len(msgs.GetMessages()) != 2 || msgs.GetMessages()[0].GetRole() != "user" || msgs.GetMessages()[0].GetContent() != "hello" {
		t.Fatalf("stored messages: %v %v", msgs, err)
	}

	// Refusals arrive before any event: 400 naming the field, 404, auth required.
	for _, bad := range []struct {
		name string
		ctx  context.Context
		req  *chatv2.SendMessageRequest
		code codes.Code
	}{
		{"empty message", s.Admin, &chatv2.SendMessageRequest{}, codes.InvalidArgument},
		{"missing conversation", s.Admin, &chatv2.SendMessageRequest{Message: "hi", ConversationId: missingSession}, codes.NotFound},
		{"no token", context.Background(), &chatv2.SendMessageRequest{Message: "hi"}, codes.Unauthenticated},
	} {
		stream, err := c.SendMessage(bad.ctx, bad.req)
		var events []*chatv2.SendMessageResponse
		if err == nil {
			events, err = recv(stream)
		}
		if status.Code(err) != bad.code || len(events) != 0 {
			t.Errorf("%s: want %v before any event, got %v after %d events", bad.name, bad.code, err, len(events))
		}
		if bad.code == codes.InvalidArgument && !slices.Contains(stack.Violations(err), "message") {
			t.Errorf("%s: violations %v do not name message", bad.name, stack.Violations(err))
		}
	}
}

func TestContractHealth(t *testing.T) {
	s := stack.StartServices(t, "chat", "analysis")
	h, err := chatv1.NewHealthServiceClient(s.Conn).Health(s.Admin, &chatv1.HealthRequest{})
	if err != nil || h.GetStatus() == "" || h.GetCheckedAt() == nil || len(h.GetServices()) == 0 {
		t.Fatalf("Health: %v %v", h, err)
	}
	for _, e := range h.GetServices() {
		if e.GetName() == "postgres" && e.GetStatus() == "unhealthy" {
			t.Fatalf("Health: postgres unhealthy on a running database: %v", e)
		}
	}
}

// followWorkflow reads a workflow's event stream to its end.
func followWorkflow(t *testing.T, s *stack.Services, id string, after int64) []*chatv1.StreamWorkflowEventsResponse {
	t.Helper()
	stream, err := chatv1.NewChatServiceClient(s.Conn).StreamWorkflowEvents(s.Admin, &chatv1.StreamWorkflowEventsRequest{WorkflowId: id, AfterSequence: after})
	if err != nil {
		t.Fatal(err)
	}
	var events []*chatv1.StreamWorkflowEventsResponse
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return events
		}
		if err != nil {
			t.Fatalf("StreamWorkflowEvents: %v after %d events", err, len(events))
		}
		events = append(events, ev)
	}
}

func TestContractWorkflows(t *testing.T) {
	s := stack.StartServices(t, "chat", "analysis")
	c := chatv1.NewChatServiceClient(s.Conn)

	started, err := c.StartWorkflow(s.Admin, &chatv1.StartWorkflowRequest{TaskDescription: "GMV by shop last 7 days"})
	if err != nil || started.GetStatus() != "pending" || started.GetWorkflowId() == "" || started.GetCreatedAt() == nil {
		t.Fatalf("StartWorkflow: %v %v", started, err)
	}
	id := started.GetWorkflowId()
	events := followWorkflow(t, s, id, 0)
	for i, ev := range events {
		if ev.GetSequence() != int64(i+1) || ev.GetWorkflowId() != id || ev.GetOccurredAt() == nil {
			t.Fatalf("event %d: %v", i, ev)
		}
	}
	last := events[len(events)-1]
	if events[0].GetStatus() != "pending" || last.GetType() != "result" || last.GetStatus() != "completed" || last.GetResult() == nil {
		t.Fatalf("events: first %v, last %v", events[0], last)
	}
	w, err := c.GetWorkflow(s.Admin, &chatv1.GetWorkflowRequest{WorkflowId: id})
	if err != nil || w.GetStatus() != "completed" || w.GetProgress() != 100 || w.GetContent() == "" || w.GetLastSequence() != last.GetSequence() ||
		w.GetResult().GetFields()["content"].GetStringValue() != w.GetContent() || w.GetFinishedAt() == nil {
		t.Fatalf("GetWorkflow: %v %v", w, err)
	}
	if rest := followWorkflow(t, s, id, last.GetSequence()-2); len(rest) != 2 || rest[1].GetSequence() != last.GetSequence() {
		t.Fatalf("resumed: %v", rest)
	}
	if again, err := c.CancelWorkflow(s.Admin, &chatv1.CancelWorkflowRequest{WorkflowId: id}); err != nil || again.GetWorkflow().GetStatus() != "completed" {
		t.Fatalf("CancelWorkflow of a completed workflow: %v %v", again, err)
	}

	// 400 naming the field, 404, 410, auth required.
	for _, bad := range []struct {
		name  string
		call  func() error
		code  codes.Code
		field string
	}{
		{"blank task", func() error {
			_, err := c.StartWorkflow(s.Admin, &chatv1.StartWorkflowRequest{TaskDescription: "  "})
			return err
		}, codes.InvalidArgument, "task_description"},
		{"unknown expert", func() error {
			_, err := c.StartWorkflow(s.Admin, &chatv1.StartWorkflowRequest{TaskDescription: "x", AgentsToUse: []string{"astrology"}})
			return err
		}, codes.InvalidArgument, "agents_to_use[0]"},
		{"malformed id", func() error {
			_, err := c.GetWorkflow(s.Admin, &chatv1.GetWorkflowRequest{WorkflowId: "nope"})
			return err
		}, codes.InvalidArgument, "workflow_id"},
		{"missing workflow", func() error {
			_, err := c.CancelWorkflow(s.Admin, &chatv1.CancelWorkflowRequest{WorkflowId: missingSession})
			return err
		}, codes.NotFound, ""},
		{"no token", func() error {
			_, err := c.StartWorkflow(context.Background(), &chatv1.StartWorkflowRequest{TaskDescription: "x"})
			return err
		}, codes.Unauthenticated, ""},
		{"session position gone", func() error {
			conv, err := chatv1.NewSessionServiceClient(s.Conn).CreateSession(s.Admin, &chatv1.CreateSessionRequest{})
			if err != nil {
				return err
			}
			stream, err := chatv1.NewSessionServiceClient(s.Conn).StreamSessionEvents(s.Admin,
				&chatv1.StreamSessionEventsRequest{ConversationId: conv.GetConversationId(), AfterOffset: 5})
			if err == nil {
				_, err = stream.Recv()
			}
			return err
		}, codes.FailedPrecondition, ""},
	} {
		err := bad.call()
		if status.Code(err) != bad.code || bad.field != "" && !slices.Contains(stack.Violations(err), bad.field) {
			t.Errorf("%s: want %v naming %q, got %v (%v)", bad.name, bad.code, bad.field, err, stack.Violations(err))
		}
	}
}
