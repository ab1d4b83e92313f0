package chat

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	"github.com/shopmind/shopmind/internal/apperr"
)

// StreamSessionEvents follows a session: its recent events after the offset (new ones only
// for 0), then the new ones as they happen, until the caller leaves. The session's
// in-memory state is held meanwhile, so the idle cleanup does not release its feed.
func (s *sessionServer) StreamSessionEvents(req *chatv1.StreamSessionEventsRequest, stream grpc.ServerStreamingServer[chatv1.StreamSessionEventsResponse]) error {
	ctx := stream.Context()
	o, err := ownerOf(ctx)
	if err != nil {
		return err
	}
	convID := req.GetConversationId()
	sess, err := s.store.getSession(ctx, o, convID)
	if err != nil {
		return apperr.Internal(err)
	}
	if sess == nil {
		return apperr.NotFound("conversation", convID)
	}
	st := s.sessions.acquire(convID)
	defer s.sessions.release(st)
	after := req.GetAfterOffset()
	if after == 0 {
		after = st.events.head()
	}
	rd := st.events.since(after)
	if rd.gone {
		return apperr.New(apperr.KindGone, "%s", fmt.Sprintf("offset %d of conversation %s is no longer available: refetch the history and follow on from offset 0", after, convID))
	}
	if err := stream.SendHeader(metadata.Pairs(ConversationHeader, convID)); err != nil {
		return err
	}
	for {
		for _, ev := range rd.items {
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
		select {
		case <-rd.wait:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
		if rd = st.events.since(rd.last); rd.gone {
			// The follower fell more than the kept events behind.
			return apperr.New(apperr.KindGone, "%s", fmt.Sprintf("the follower of conversation %s fell behind: refetch the history and follow on from offset 0", convID))
		}
	}
}
