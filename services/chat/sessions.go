package chat

import (
	"context"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// Defaults and bounds of the session endpoints (the proto comments document them).
const (
	defaultSessionLimit = 20
	defaultMessageLimit = 100
	recentMessages      = 5
	previewChars        = 200
	maxPreferencesBytes = 16 << 10
)

// sessionServer is the v1 SessionService. Every call is scoped to the caller's tenant and
// user: another user's session answers exactly like a missing one (404), so ids never leak.
type sessionServer struct {
	chatv1.UnimplementedSessionServiceServer
	store    *store
	sessions *sessions
}

// ownerOf returns the caller as a session owner.
func ownerOf(ctx context.Context) (owner, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return owner{}, err
	}
	return owner{tenantID: id.TenantID, userID: id.UserID}, nil
}

func (s *sessionServer) CreateSession(ctx context.Context, _ *chatv1.CreateSessionRequest) (*chatv1.CreateSessionResponse, error) {
	o, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	id := uuid.NewString()
	if err := s.store.createSession(ctx, o, id); err != nil {
		return nil, apperr.Internal(err)
	}
	return &chatv1.CreateSessionResponse{ConversationId: id, Status: sessionActive}, nil
}

func (s *sessionServer) ListSessions(ctx context.Context, req *chatv1.ListSessionsRequest) (*chatv1.ListSessionsResponse, error) {
	o, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	if req.UserId != nil && req.GetUserId() != o.userID {
		return nil, apperr.New(apperr.KindForbidden, "user_id: only your own sessions can be listed")
	}
	limit := defaultSessionLimit
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	total, recs, err := s.store.listSessions(ctx, o, req.GetStatus(), limit, int(req.GetOffset()))
	if err != nil {
		return nil, apperr.Internal(err)
	}
	out := &chatv1.ListSessionsResponse{Total: total, Sessions: make([]*chatv1.Session, 0, len(recs))}
	for _, r := range recs {
		out.Sessions = append(out.Sessions, sessionPB(r))
	}
	return out, nil
}

func (s *sessionServer) GetSession(ctx context.Context, req *chatv1.GetSessionRequest) (*chatv1.GetSessionResponse, error) {
	o, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := s.own(ctx, o, req.GetConversationId())
	if err != nil {
		return nil, err
	}
	msgs, err := s.store.listMessages(ctx, rec.ID, recentMessages, true)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	out := &chatv1.GetSessionResponse{Session: sessionPB(rec), RecentMessages: make([]*chatv1.MessageSummary, 0, len(msgs))}
	for _, m := range msgs {
		out.RecentMessages = append(out.RecentMessages, &chatv1.MessageSummary{Id: m.ID, Role: m.Role,
			ContentPreview: preview(m.Content, previewChars), CreatedAt: timestamppb.New(m.CreatedAt)})
	}
	return out, nil
}

func (s *sessionServer) UpdateSession(ctx context.Context, req *chatv1.UpdateSessionRequest) (*chatv1.UpdateSessionResponse, error) {
	o, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	var c sessionChanges
	if mask := req.GetUpdateMask(); mask != nil {
		// Exactly the named fields; a named field left unset is cleared or reset.
		for _, path := range mask.GetPaths() {
			switch path {
			case "title":
				c.Title = proto.String(req.GetTitle())
			case "favorite":
				c.Favorite = proto.Bool(req.GetFavorite())
			case "preferences":
				if c.Preferences, err = preferencesJSON(req.GetPreferences()); err != nil {
					return nil, err
				}
			case "status":
				c.Status = proto.String(req.GetStatus())
			}
		}
	} else {
		c.Title, c.Favorite, c.Status = req.Title, req.Favorite, req.Status
		if req.Preferences != nil {
			if c.Preferences, err = preferencesJSON(req.Preferences); err != nil {
				return nil, err
			}
		}
	}
	rec, err := s.store.updateSession(ctx, o, req.GetId(), c)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if rec == nil {
		return nil, apperr.NotFound("session", req.GetId())
	}
	return &chatv1.UpdateSessionResponse{Session: sessionPB(rec)}, nil
}

func (s *sessionServer) DeleteSession(ctx context.Context, req *chatv1.DeleteSessionRequest) (*chatv1.DeleteSessionResponse, error) {
	o, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	deleted, err := s.store.deleteSession(ctx, o, req.GetId())
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if !deleted {
		return &chatv1.DeleteSessionResponse{Status: "warning", Message: "no session " + req.GetId() + " to delete: nothing was done"}, nil
	}
	s.sessions.drop(req.GetId())
	return &chatv1.DeleteSessionResponse{Status: "success", Message: "session and its messages deleted"}, nil
}

func (s *sessionServer) ListSessionMessages(ctx context.Context, req *chatv1.ListSessionMessagesRequest) (*chatv1.ListSessionMessagesResponse, error) {
	o, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := s.own(ctx, o, req.GetConversationId())
	if err != nil {
		return nil, err
	}
	limit := defaultMessageLimit
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	msgs, err := s.store.listMessages(ctx, rec.ID, limit, true)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	out := &chatv1.ListSessionMessagesResponse{Messages: make([]*chatv1.Message, 0, len(msgs))}
	for _, m := range msgs {
		pb := &chatv1.Message{Id: m.ID, Role: m.Role, Content: m.Content, Status: m.Status, CreatedAt: timestamppb.New(m.CreatedAt)}
		if m.ContentJSON != nil {
			pb.ContentJson = &structpb.Struct{}
			if err := protojson.Unmarshal(m.ContentJSON, pb.ContentJson); err != nil {
				return nil, apperr.Internal(err)
			}
		}
		out.Messages = append(out.Messages, pb)
	}
	return out, nil
}

// own returns the caller's session or the 404 every other case gets.
func (s *sessionServer) own(ctx context.Context, o owner, id string) (*sessionRecord, error) {
	rec, err := s.store.getSession(ctx, o, id)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if rec == nil {
		return nil, apperr.NotFound("session", id)
	}
	return rec, nil
}

// preferencesJSON is the stored form of preferences ({} for none), bounded in size.
func preferencesJSON(p *structpb.Struct) ([]byte, error) {
	if p == nil {
		return []byte("{}"), nil
	}
	if proto.Size(p) > maxPreferencesBytes {
		return nil, apperr.InvalidFields([]apperr.FieldViolation{{Field: "preferences", Rule: "preferences.max_size", Message: "must be at most 16 KiB"}})
	}
	b, err := protojson.Marshal(p)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return b, nil
}

func sessionPB(r *sessionRecord) *chatv1.Session {
	prefs := &structpb.Struct{}
	if len(r.Preferences) > 0 {
		_ = protojson.Unmarshal(r.Preferences, prefs)
	}
	return &chatv1.Session{Id: r.ID, ConversationId: r.ID, UserId: r.UserID, Title: r.Title, Status: r.Status,
		Favorite: r.Favorite, Preferences: prefs, MessageCount: r.MessageCount,
		CreatedAt: timestamppb.New(r.CreatedAt), UpdatedAt: timestamppb.New(r.UpdatedAt)}
}
