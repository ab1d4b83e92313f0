package notify_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract tests: Publish (the internal call producers make) and the listing, on the gRPC
// server only.

func TestContractPublishListMarkRead(t *testing.T) {
	s := stack.StartServices(t, "notify")
	pub := notifyv1.NewNotifyPublisherServiceClient(s.Conn)
	c := notifyv1.NewNotifyServiceClient(s.Conn)

	publish := func(typ, level, title string, shop int64, dedup string) *notifyv1.PublishResponse {
		t.Helper()
		r, err := pub.Publish(s.Admin, &notifyv1.PublishRequest{Type: typ, Level: level, Title: title, Content: "details of " + title,
			Source: "basic.sync", ShopId: shop, DedupKey: dedup})
		if err != nil {
			t.Fatalf("Publish %s: %v", title, err)
		}
		return r
	}
	a := publish("sync_result", "info", "Sync of shop 1 done", 1, "")
	b := publish("partner_failure", "error", "Partner A failed", 0, "")
	d := publish("sync_result", "warning", "Sync of shop 2 partial", 2, "k-1")
	if again := publish("sync_result", "warning", "Sync of shop 2 partial", 2, "k-1"); again.GetId() != d.GetId() || !again.GetDuplicate() {
		t.Fatalf("dedup: %v vs %v", again, d)
	}

	all, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{})
	if err != nil || all.GetTotal() != 3 || all.GetUnread() != 3 || all.GetPageSize() != 10 || all.GetPageNum() != 1 {
		t.Fatalf("list: %v %v", all, err)
	}
	if ids := []int64{all.GetItems()[0].GetId(), all.GetItems()[1].GetId(), all.GetItems()[2].GetId()}; !slices.Equal(ids, []int64{d.GetId(), b.GetId(), a.GetId()}) {
		t.Fatalf("default order newest first: %v", ids)
	}
	byLevel, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{Sort: "level,desc"})
	if err != nil || byLevel.GetItems()[0].GetLevel() != "error" || byLevel.GetItems()[2].GetLevel() != "info" {
		t.Fatalf("sort level: %v %v", byLevel, err)
	}
	shop := int64(2)
	f, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{Type: "sync_result", ShopId: &shop})
	if err != nil || f.GetTotal() != 1 || f.GetItems()[0].GetId() != d.GetId() {
		t.Fatalf("filter type and shop: %v %v", f, err)
	}
	kw, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{Keyword: "PARTNER", Level: "error"})
	if err != nil || kw.GetTotal() != 1 || kw.GetItems()[0].GetId() != b.GetId() {
		t.Fatalf("filter keyword and level: %v %v", kw, err)
	}
	future := timestamppb.New(time.Now().Add(time.Hour))
	if late, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{StartTime: future}); err != nil || late.GetTotal() != 0 {
		t.Fatalf("filter start time: %v %v", late, err)
	}
	size := int32(2)
	num := int32(2)
	p2, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{PageNum: &num, PageSize: &size})
	if err != nil || p2.GetTotal() != 3 || len(p2.GetItems()) != 1 || p2.GetItems()[0].GetId() != a.GetId() {
		t.Fatalf("page 2: %v %v", p2, err)
	}

	m, err := c.MarkRead(s.Admin, &notifyv1.MarkReadRequest{Ids: []int64{a.GetId(), b.GetId()}})
	if err != nil || m.GetChanged() != 2 {
		t.Fatalf("MarkRead: %v %v", m, err)
	}
	read := true
	r, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{Read: &read})
	if err != nil || r.GetTotal() != 2 || r.GetUnread() != 1 || !r.GetItems()[0].GetRead() {
		t.Fatalf("read filter: %v %v", r, err)
	}
	// An unknown id among known ones: 404, nothing changed.
	if _, err := c.MarkRead(s.Admin, &notifyv1.MarkReadRequest{Ids: []int64{d.GetId(), 987654}}); status.Code(err) != codes.NotFound {
		t.Fatalf("MarkRead unknown id: %v", err)
	}
	if u, _ := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{}); u.GetUnread() != 1 {
		t.Fatalf("a refused MarkRead changed the read state: %v", u)
	}
	if all, err := c.MarkAllRead(s.Admin, &notifyv1.MarkAllReadRequest{}); err != nil || all.GetChanged() != 1 {
		t.Fatalf("MarkAllRead: %v %v", all, err)
	}

	// Bad input names the field.
	for _, bad := range []struct {
		name  string
		call  func() error
		field string
	}{
		{"101 ids", func() error {
			ids := make([]int64, 101)
			for i := range ids {
				ids[i] = int64(i + 1)
			}
			_, err := c.MarkRead(s.Admin, &notifyv1.MarkReadRequest{Ids: ids})
			return err
		}, "ids"},
		{"no ids", func() error { _, err := c.MarkRead(s.Admin, &notifyv1.MarkReadRequest{}); return err }, "ids"},
		{"level", func() error {
			_, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{Level: "fatal"})
			return err
		}, "level"},
		{"sort field", func() error {
			_, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{Sort: "title,asc"})
			return err
		}, "sort"},
		{"page size", func() error {
			n := int32(101)
			_, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{PageSize: &n})
			return err
		}, "page_size"},
		{"publish title", func() error {
			_, err := pub.Publish(s.Admin, &notifyv1.PublishRequest{Type: "x", Level: "info", Source: "basic"})
			return err
		}, "title"},
	} {
		if err := bad.call(); status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), bad.field) {
			t.Errorf("%s: want InvalidArgument naming %s, got %v (%v)", bad.name, bad.field, err, stack.Violations(err))
		}
	}
	if _, err := c.ListCollected(context.Background(), &notifyv1.ListCollectedRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no token: %v", err)
	}
	if _, err := pub.Publish(context.Background(), &notifyv1.PublishRequest{Type: "x", Level: "info", Title: "t", Source: "basic"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("publish without a token: %v", err)
	}
}
