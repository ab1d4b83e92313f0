package basic

import (
	"context"
	"errors"
	"fmt"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/notifyclient"
)

// Notifications the basic service produces (internal/notifyclient: best effort, never
// failing the request): the result of each goods sync from the platform and of each item
// number import (type sync_result / import_result, to the user who ran it), and the failures
// of the platform and partner A (type partner_failure, level error).

// upstreamFailure reports whether err is the upstream's fault (unreachable, refusing, too
// slow): a partner failure rather than a bad request.
func upstreamFailure(err error) bool {
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		return errors.Is(err, context.DeadlineExceeded)
	}
	switch ae.Kind {
	case apperr.KindUpstream, apperr.KindTimeout, apperr.KindUnavailable:
		return true
	}
	return false
}

// callerEnded reports a failure that is the caller's own: its request was cancelled or ran
// past its own deadline (the sync's SyncTimeout is a deadline of its own, inside it). The
// caller saw its call end; neither the platform nor the partner failed.
func callerEnded(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil
}

func (c *handlerDeps) notifyPlatformSync(ctx context.Context, sh *shopRecord, res syncCounts, err error) {
	id := authn.FromContext(ctx)
	if id == nil || callerEnded(ctx, err) {
		return
	}
	n := notifyclient.Notification{Source: "basic.sync", ShopID: sh.ID, UserID: id.UserID}
	switch {
	case err == nil:
		n.Type, n.Level = "sync_result", notifyclient.LevelInfo
		n.Title = fmt.Sprintf("Goods sync of %s done: %d created, %d updated", sh.Name, res.created, res.updated)
		n.Content = fmt.Sprintf("Shop %s (%s): %d goods created, %d updated, %d unchanged.", sh.Name, sh.Platform, res.created, res.updated, res.unchanged)
	case upstreamFailure(err):
		n.Type, n.Level = "partner_failure", notifyclient.LevelError
		n.Title = fmt.Sprintf("Goods sync of %s failed: the platform did not answer", sh.Name)
		n.Content = fmt.Sprintf("Shop %s (%s): %s. Pages synced before the failure were kept (%d created, %d updated).",
			sh.Name, sh.Platform, errorText(err), res.created, res.updated)
	default:
		n.Type, n.Level = "sync_result", notifyclient.LevelError
		n.Title = fmt.Sprintf("Goods sync of %s failed", sh.Name)
		n.Content = fmt.Sprintf("Shop %s (%s): %s.", sh.Name, sh.Platform, errorText(err))
	}
	c.notify.Publish(ctx, n)
}

func (c *handlerDeps) notifyPartnerASync(ctx context.Context, goods int, err error) {
	id := authn.FromContext(ctx)
	if id == nil || err == nil || !upstreamFailure(err) || callerEnded(ctx, err) {
		return
	}
	c.notify.Publish(ctx, notifyclient.Notification{Type: "partner_failure", Level: notifyclient.LevelError, Source: "basic.partner_a",
		UserID: id.UserID, Title: "SKU sync from partner A failed",
		Content: fmt.Sprintf("SKU sync of %d goods from partner A: %s. Nothing was written.", goods, errorText(err))})
}

func (c *handlerDeps) notifyImport(ctx context.Context, resp *basicv1.ImportItemNumbersResponse) {
	id := authn.FromContext(ctx)
	if id == nil {
		return
	}
	level := notifyclient.LevelInfo
	if len(resp.GetErrors()) > 0 {
		level = notifyclient.LevelWarning
	}
	content := fmt.Sprintf("%d item numbers imported, %d rows refused.", resp.GetImported(), len(resp.GetErrors()))
	for i, e := range resp.GetErrors() {
		if i == 5 {
			content += fmt.Sprintf("\n... and %d more", len(resp.GetErrors())-5)
			break
		}
		content += fmt.Sprintf("\nrow %d (%s): %s", e.GetRow(), e.GetField(), e.GetMessage())
	}
	c.notify.Publish(ctx, notifyclient.Notification{Type: "import_result", Level: level, Source: "basic.import", UserID: id.UserID,
		Title: fmt.Sprintf("Item number import: %d imported, %d refused", resp.GetImported(), len(resp.GetErrors())), Content: content})
}

// errorText is what a notification says of a failure: the error's client message.
func errorText(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "time limit exceeded"
	}
	return "internal error"
}
