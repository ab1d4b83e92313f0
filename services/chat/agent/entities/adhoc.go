// Ad-hoc page data in the entity index: the pages the browser extension captured on demand
// (services/crx, POST /api/v1/data/crx/adhoc), read from the crx service over gRPC as the
// asking user, so the index holds only what crx's own access rule lets that user list.

package entities

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/vector"
)

// CrxTarget is the target the agents dial for the extension backend.
const CrxTarget = "crx"

// AdhocCollection is the vector collection of the ad-hoc page records (apart from the
// basic data's, which a re-index replaces whole).
const AdhocCollection = "adhoc"

// KindAdhoc is the entity kind of an ad-hoc page record.
const KindAdhoc = "adhoc"

// MaxAdhoc bounds the ad-hoc records indexed per viewer (the newest first).
const MaxAdhoc = 5000

// Adhoc is what the index reads of the extension backend.
type Adhoc interface {
	ListAdhoc(ctx context.Context, req *crxv1.ListAdhocRequest) (*crxv1.ListAdhocResponse, error)
}

// GRPCAdhoc calls ExtensionService as the caller (agent.CallAs).
type GRPCAdhoc struct {
	client  crxv1.ExtensionServiceClient
	timeout time.Duration
}

// NewGRPCAdhoc wraps a connection to the crx target; timeout bounds each call.
func NewGRPCAdhoc(conn grpc.ClientConnInterface, timeout time.Duration) *GRPCAdhoc {
	return &GRPCAdhoc{client: crxv1.NewExtensionServiceClient(conn), timeout: timeout}
}

// ListAdhoc implements Adhoc.
func (g *GRPCAdhoc) ListAdhoc(ctx context.Context, req *crxv1.ListAdhocRequest) (*crxv1.ListAdhocResponse, error) {
	return agent.CallAs(ctx, g.timeout, g.client.ListAdhoc, req)
}

// Viewer is who searches: the tenant, the user and whether the user sees every user's
// ad-hoc records (administrators, as in crx's listing).
type Viewer struct {
	TenantID int64
	UserID   int64
	All      bool
}

func (v Viewer) scope() string {
	if v.All {
		return fmt.Sprintf("%d:all", v.TenantID)
	}
	return fmt.Sprintf("%d:u%d", v.TenantID, v.UserID)
}

// where is the store filter of the records the viewer may see.
func (v Viewer) where() []vector.Match {
	if v.All {
		return nil
	}
	return []vector.Match{{Key: "user_id", Value: strconv.FormatInt(v.UserID, 10)}}
}

// adhocIndex keeps the ad-hoc records' vectors. Records are immutable and never deleted
// in crx, so the index only grows: a record is embedded once per process and upserted.
type adhocIndex struct {
	src     Adhoc
	store   vector.Store
	tenants agent.PerTenant[adhocTenant]
}

// adhocTenant is the ad-hoc index's state of one tenant; mu is held while it is refreshed.
type adhocTenant struct {
	mu sync.Mutex
	// fingerprint per viewer scope: the count and newest record crx lists to that viewer
	fingerprint map[string]string
	// seen per viewer scope: the record ids crx listed to that viewer
	seen map[string]map[int64]bool
	// embedded: the record ids whose texts are in the store
	embedded map[int64]bool
}

// WithAdhoc makes the index search the ad-hoc page records too, read from src as the
// caller and kept in store (a collection of its own). It returns x.
func (x *Index) WithAdhoc(src Adhoc, store vector.Store) *Index {
	x.adhoc = &adhocIndex{src: src, store: store}
	return x
}

// denied reports crx refusing the listing to this user (no crx:data:adhoc permission):
// the user may see no ad-hoc records, which is not a failure of the search.
func denied(err error) bool {
	c := status.Code(err)
	return c == codes.PermissionDenied || c == codes.Unauthenticated
}

// refresh brings the viewer's records into the store when crx lists a different count or
// newest record than at the last refresh of that viewer (one listing of one row per
// search, as the basic data's fingerprint); then it pages newest first until every listed
// record was seen. It reports false when the viewer may not list ad-hoc records.
func (a *adhocIndex) refresh(ctx context.Context, embedder vector.Embedder, v Viewer) (bool, error) {
	head, err := a.src.ListAdhoc(ctx, &crxv1.ListAdhocRequest{PageNum: proto.Int32(1), PageSize: proto.Int32(1)})
	if denied(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ad-hoc records: %w", err)
	}
	fp := fmt.Sprint(head.GetTotal())
	for _, r := range head.GetItems() {
		fp += " " + strconv.FormatInt(r.GetId(), 10)
	}
	key := v.scope()
	t := a.tenants.Of(v.TenantID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fingerprint == nil {
		t.fingerprint, t.seen, t.embedded = map[string]string{}, map[string]map[int64]bool{}, map[int64]bool{}
	}
	if t.fingerprint[key] == fp {
		return true, nil
	}
	// work on a copy: the scope's state changes only when the records reached the store
	seen := make(map[int64]bool, len(t.seen[key])+int(page))
	for id := range t.seen[key] {
		seen[id] = true
	}
	done := t.embedded
	var fresh []*crxv1.AdhocRecord
	queued := map[int64]bool{}
	total := head.GetTotal()
	// Newest first until every record crx counts was seen: a record committed late (a lower
	// id) can sit below records seen already. Beyond MaxAdhoc, until a page brings nothing
	// new (older records are not indexed).
	for n := int32(1); int64(len(seen)) < total && n <= MaxAdhoc/page+1; n++ {
		resp, err := a.src.ListAdhoc(ctx, &crxv1.ListAdhocRequest{PageNum: proto.Int32(n), PageSize: proto.Int32(page)})
		if err != nil {
			return false, fmt.Errorf("ad-hoc records: %w", err)
		}
		total = resp.GetTotal()
		added := 0
		for _, r := range resp.GetItems() {
			if !seen[r.GetId()] {
				seen[r.GetId()] = true
				added++
			}
			if !done[r.GetId()] && !queued[r.GetId()] {
				fresh = append(fresh, r)
				queued[r.GetId()] = true
			}
		}
		if len(resp.GetItems()) < int(page) || (added == 0 && len(seen) >= MaxAdhoc) {
			break
		}
	}
	its := adhocItems(fresh)
	if len(its) > 0 {
		texts := make([]string, len(its))
		for i := range its {
			texts[i] = its[i].Text
		}
		vecs, err := embedder.Embed(ctx, texts)
		if err != nil {
			return false, fmt.Errorf("embed ad-hoc records: %w", err)
		}
		for i := range its {
			its[i].Vector = vecs[i]
		}
		if err := a.store.Upsert(ctx, v.TenantID, its); err != nil {
			return false, err
		}
	}
	for _, r := range fresh {
		done[r.GetId()] = true
	}
	t.seen[key], t.fingerprint[key] = seen, fp
	return true, nil
}

// maxFieldTexts bounds the captured fields indexed as texts of their own per record.
const maxFieldTexts = 24

// maxCaptured bounds the captured fields' text kept in a result.
const maxCaptured = 400

// adhocItems builds the indexed texts of records: the title, the page URL, the captured
// fields together and each field on its own ("price: 129"), each carrying the record and
// its uploader in its metadata (the viewer filter).
func adhocItems(records []*crxv1.AdhocRecord) []vector.Item {
	var out []vector.Item
	for _, r := range records {
		fields := FieldTexts(r.GetData())
		captured := strings.Join(fields, "; ")
		if len(captured) > maxCaptured {
			captured = strings.ToValidUTF8(captured[:maxCaptured], "") + "…"
		}
		name := r.GetPageTitle()
		if strings.TrimSpace(name) == "" {
			name = r.GetPageUrl()
		}
		meta := map[string]string{"kind": KindAdhoc, "id": strconv.FormatInt(r.GetId(), 10), "name": name,
			"page_url": r.GetPageUrl(), "platform": r.GetPlatform(), "captured": captured,
			"user_id": strconv.FormatInt(r.GetUserId(), 10), "collected_at": r.GetCollectedAt().AsTime().UTC().Format(time.RFC3339)}
		texts := []text{{"title", r.GetPageTitle()}, {"page_url", r.GetPageUrl()},
			{"page", strings.TrimSpace(r.GetPageTitle() + " " + captured)}}
		for _, f := range fields[:min(len(fields), maxFieldTexts)] {
			texts = append(texts, text{"field", f})
		}
		seen := map[string]bool{}
		for i, t := range texts {
			v := strings.TrimSpace(t.value)
			if v == "" || seen[strings.ToLower(v)] {
				continue
			}
			seen[strings.ToLower(v)] = true
			m := map[string]string{"field": t.field}
			for k, x := range meta {
				m[k] = x
			}
			out = append(out, vector.Item{ID: fmt.Sprintf("%s:%d:%d", KindAdhoc, r.GetId(), i), Text: v, Metadata: m})
		}
	}
	return out
}

// FieldTexts writes captured JSON as "key: value" texts, nested keys joined with dots
// ("price.current: 129"), lists' items under their key, in key order.
func FieldTexts(data *structpb.Struct) []string {
	var out []string
	var walk func(prefix string, v *structpb.Value)
	walk = func(prefix string, v *structpb.Value) {
		if len(out) >= 4*maxFieldTexts {
			return
		}
		switch k := v.GetKind().(type) {
		case *structpb.Value_StructValue:
			keys := make([]string, 0, len(k.StructValue.GetFields()))
			for key := range k.StructValue.GetFields() {
				keys = append(keys, key)
			}
			sort.Strings(keys)
			for _, key := range keys {
				p := key
				if prefix != "" {
					p = prefix + "." + key
				}
				walk(p, k.StructValue.GetFields()[key])
			}
		case *structpb.Value_ListValue:
			for _, item := range k.ListValue.GetValues() {
				walk(prefix, item)
			}
		case *structpb.Value_StringValue:
			out = append(out, prefix+": "+k.StringValue)
		case *structpb.Value_NumberValue:
			out = append(out, prefix+": "+strconv.FormatFloat(k.NumberValue, 'f', -1, 64))
		case *structpb.Value_BoolValue:
			out = append(out, prefix+": "+strconv.FormatBool(k.BoolValue))
		}
	}
	walk("", structpb.NewStructValue(data))
	return out
}
