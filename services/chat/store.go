package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Message kinds, roles and statuses as stored.
const (
	kindText       = "text"
	kindToolUse    = "tool_use"
	kindToolResult = "tool_result"

	statusComplete    = "complete"
	statusInterrupted = "interrupted"

	sessionActive   = "active"
	sessionArchived = "archived"
)

// owner is the caller a session belongs to: every query is scoped by both ids, so another
// user's or another tenant's session is indistinguishable from a missing one.
type owner struct {
	tenantID int64
	userID   int64
}

// store is the chat service's access to its schema.
type store struct {
	pool *pgxpool.Pool
}

type sessionRecord struct {
	ID           string
	UserID       int64
	Title        string
	Status       string
	Favorite     bool
	Preferences  []byte // JSON object
	MessageCount int32
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

type messageRecord struct {
	ID          string
	SessionID   string
	Role        string
	Content     string
	ContentJSON []byte // nil: none
	Kind        string
	Status      string
	CreatedAt   time.Time
}

const sessionColumns = `s.id, s.user_id, s.title, s.status, s.favorite, s.preferences, s.created_at, s.updated_at,
	(SELECT count(*) FROM chat.messages m WHERE m.session_id = s.id AND m.kind = 'text')::int`

func scanSession(row pgx.Row) (*sessionRecord, error) {
	s := &sessionRecord{}
	err := row.Scan(&s.ID, &s.UserID, &s.Title, &s.Status, &s.Favorite, &s.Preferences, &s.CreatedAt, &s.UpdatedAt, &s.MessageCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return s, err
}

// getSession returns the caller's session, or nil when the caller has none with that id.
func (st *store) getSession(ctx context.Context, o owner, id string) (*sessionRecord, error) {
	return scanSession(st.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM chat.sessions s
		WHERE s.id = $1 AND s.tenant_id = $2 AND s.user_id = $3`, id, o.tenantID, o.userID))
}

// createSession stores an empty active session.
func (st *store) createSession(ctx context.Context, o owner, id string) error {
	_, err := st.pool.Exec(ctx, `INSERT INTO chat.sessions (id, tenant_id, user_id) VALUES ($1, $2, $3)`, id, o.tenantID, o.userID)
	return err
}

// listSessions returns one page of the caller's sessions, most recently updated first, and
// the number of sessions matching the status filter ("" for all).
func (st *store) listSessions(ctx context.Context, o owner, status string, limit, offset int) (int64, []*sessionRecord, error) {
	var total int64
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM chat.sessions
		WHERE tenant_id = $1 AND user_id = $2 AND ($3 = '' OR status = $3)`, o.tenantID, o.userID, status).Scan(&total); err != nil {
		return 0, nil, err
	}
	rows, err := st.pool.Query(ctx, `SELECT `+sessionColumns+` FROM chat.sessions s
		WHERE s.tenant_id = $1 AND s.user_id = $2 AND ($3 = '' OR s.status = $3)
		ORDER BY s.updated_at DESC, s.id DESC LIMIT $4 OFFSET $5`, o.tenantID, o.userID, status, limit, offset)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var out []*sessionRecord
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, s)
	}
	return total, out, rows.Err()
}

// sessionChanges are the metadata fields an update sets; nil fields stay.
type sessionChanges struct {
	Title       *string
	Favorite    *bool
	Preferences []byte // nil: unchanged
	Status      *string
}

func (c sessionChanges) empty() bool {
	return c.Title == nil && c.Favorite == nil && c.Preferences == nil && c.Status == nil
}

// updateSession applies the changes to the caller's session and returns it, or nil when the
// caller has no such session.
func (st *store) updateSession(ctx context.Context, o owner, id string, c sessionChanges) (*sessionRecord, error) {
	if c.empty() {
		return st.getSession(ctx, o, id)
	}
	sets := []string{"updated_at = clock_timestamp()"}
	args := []any{id, o.tenantID, o.userID}
	add := func(column string, v any) {
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", column, len(args)))
	}
	if c.Title != nil {
		add("title", *c.Title)
	}
	if c.Favorite != nil {
		add("favorite", *c.Favorite)
	}
	if c.Preferences != nil {
		add("preferences", c.Preferences)
	}
	if c.Status != nil {
		add("status", *c.Status)
	}
	return scanSession(st.pool.QueryRow(ctx, `UPDATE chat.sessions s SET `+strings.Join(sets, ", ")+`
		WHERE s.id = $1 AND s.tenant_id = $2 AND s.user_id = $3 RETURNING `+sessionColumns, args...))
}

// deleteSession deletes the caller's session and its messages; false when there was none.
func (st *store) deleteSession(ctx context.Context, o owner, id string) (bool, error) {
	tag, err := st.pool.Exec(ctx, `DELETE FROM chat.sessions WHERE id = $1 AND tenant_id = $2 AND user_id = $3`, id, o.tenantID, o.userID)
	return tag.RowsAffected() > 0, err
}

// listMessages returns the most recent limit messages of a session in ascending order; with
// visibleOnly, tool_use and tool_result messages are left out.
func (st *store) listMessages(ctx context.Context, sessionID string, limit int, visibleOnly bool) ([]*messageRecord, error) {
	rows, err := st.pool.Query(ctx, `SELECT id, session_id, role, content, content_json, kind, status, created_at FROM (
			SELECT * FROM chat.messages WHERE session_id = $1 AND (NOT $2 OR kind = 'text')
			ORDER BY created_at DESC, id DESC LIMIT $3
		) recent ORDER BY created_at, id`, sessionID, visibleOnly, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*messageRecord
	for rows.Next() {
		m := &messageRecord{}
		if err := rows.Scan(&m.ID, &m.SessionID, &m.Role, &m.Content, &m.ContentJSON, &m.Kind, &m.Status, &m.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// errNoSession reports that the session to add a message to is not the caller's (or is gone).
var errNoSession = errors.New("no such session")

// addUserMessage stores the user's message of an exchange, creating the session first when
// create is set. A session still without messages and without a title takes title. It
// returns the session's updated_at before (zero for a new session) and after the insert:
// the version the in-memory history cache is checked against.
func (st *store) addUserMessage(ctx context.Context, o owner, sessionID string, create bool, msg *messageRecord, title string) (before, after time.Time, err error) {
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		return before, after, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if create {
		if _, err := tx.Exec(ctx, `INSERT INTO chat.sessions (id, tenant_id, user_id) VALUES ($1, $2, $3)`,
			sessionID, o.tenantID, o.userID); err != nil {
			return before, after, err
		}
	} else {
		err := tx.QueryRow(ctx, `SELECT updated_at FROM chat.sessions WHERE id = $1 AND tenant_id = $2 AND user_id = $3 FOR UPDATE`,
			sessionID, o.tenantID, o.userID).Scan(&before)
		if errors.Is(err, pgx.ErrNoRows) {
			return before, after, errNoSession
		}
		if err != nil {
			return before, after, err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO chat.messages (id, session_id, role, content, kind, status) VALUES ($1, $2, $3, $4, 'text', 'complete')`,
		msg.ID, sessionID, msg.Role, msg.Content); err != nil {
		return before, after, err
	}
	if err := tx.QueryRow(ctx, `UPDATE chat.sessions s SET updated_at = clock_timestamp(),
			title = CASE WHEN s.title = '' AND NOT EXISTS (SELECT 1 FROM chat.messages m WHERE m.session_id = s.id AND m.id <> $2)
				THEN $3 ELSE s.title END
		WHERE s.id = $1 RETURNING updated_at`, sessionID, msg.ID, title).Scan(&after); err != nil {
		return before, after, err
	}
	return before, after, tx.Commit(ctx)
}

// addReply stores an assistant reply and touches its session; it returns the session's new
// updated_at. It fails when the session was deleted meanwhile.
func (st *store) addReply(ctx context.Context, sessionID string, msg *messageRecord) (time.Time, error) {
	var after time.Time
	err := st.pool.QueryRow(ctx, `WITH m AS (
			INSERT INTO chat.messages (id, session_id, role, content, content_json, kind, status)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING session_id)
		UPDATE chat.sessions SET updated_at = clock_timestamp() WHERE id = (SELECT session_id FROM m) RETURNING updated_at`,
		msg.ID, sessionID, msg.Role, msg.Content, msg.ContentJSON, msg.Kind, msg.Status).Scan(&after)
	return after, err
}
