// Package notifyclient is how services produce notifications: one call,
// NotifyPublisherService.Publish on the notify target, made on behalf of the signed-in user
// whose request produced it (their token is forwarded, so the notification lands in their
// tenant). Notifying is best effort by design: Publish never returns an error and never
// outlives its own short deadline (DefaultTimeout, 2 s), so a notify service that is down or
// refusing never fails the producer's own request; one that hangs delays it by at most that
// deadline. Failures are logged.
package notifyclient

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// Target is the notify service's target name.
const Target = "notify"

// DefaultTimeout bounds one Publish call.
const DefaultTimeout = 2 * time.Second

// Levels of a notification.
const (
	LevelInfo    = "info"
	LevelWarning = "warning"
	LevelError   = "error"
)

// Notification is what a producer says; see notifyv1.PublishRequest for the fields' rules
// (type a lowercase identifier, title 1 to 256 characters, content at most 8192, source a
// lowercase dotted name). Title and Content are clipped to their bounds here.
type Notification struct {
	Type, Level, Title, Content, Source string
	ShopID                              int64
	// UserID is the recipient; 0: every user of the tenant.
	UserID int64
	// DedupKey makes a repeated publication store nothing (a retried batch, ...).
	DedupKey string
}

// Publisher publishes notifications. The zero value and a nil *Publisher publish nothing.
type Publisher struct {
	// Dial returns the connection to a target (service.Deps.Dial).
	Dial    func(target string) (grpc.ClientConnInterface, error)
	Log     *slog.Logger
	Timeout time.Duration // 0: DefaultTimeout
}

// New returns a publisher over dial.
func New(dial func(string) (grpc.ClientConnInterface, error), log *slog.Logger) *Publisher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Publisher{Dial: dial, Log: log}
}

// Publish sends n on behalf of ctx's caller and reports whether a new notification was
// stored (false for a repeated DedupKey and for failures). It never fails the caller: errors are logged and answered false. The call is detached from ctx's
// cancellation (a producer whose client went away still notifies) and bounded by Timeout.
func (p *Publisher) Publish(ctx context.Context, n Notification) bool {
	if p == nil || p.Dial == nil {
		return false
	}
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if authn.FromContext(ctx) == nil {
		log.Warn("notification not sent: no signed-in caller", "type", n.Type, "source", n.Source)
		return false
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(authn.Outgoing(context.WithoutCancel(ctx)), timeout)
	defer cancel()
	conn, err := p.Dial(Target)
	if err != nil {
		log.Warn("notification not sent", "type", n.Type, "source", n.Source, "error", err)
		return false
	}
	resp, err := notifyv1.NewNotifyPublisherServiceClient(conn).Publish(cctx, &notifyv1.PublishRequest{
		Type: n.Type, Level: n.Level, Title: clip(n.Title, 256), Content: clip(n.Content, 8192), Source: n.Source,
		ShopId: n.ShopID, UserId: n.UserID, DedupKey: n.DedupKey})
	if err != nil {
		log.Warn("notification not sent", "type", n.Type, "source", n.Source, "error", err)
		return false
	}
	return !resp.GetDuplicate()
}

// clip cuts s to at most n characters (runes), marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
