package basic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/notifyclient"
	"github.com/shopmind/shopmind/internal/pbjson"
	"github.com/shopmind/shopmind/internal/restapi"
)

// importServer is ImportService (import.proto; IMPORT.md).
type importServer struct {
	basicv1.UnimplementedImportServiceServer
	c  *handlerDeps
	im *Importer
}

// chunkReader turns the Import stream's data messages into a reader (the options message
// read first).
type chunkReader struct {
	stream grpc.ClientStreamingServer[basicv1.ImportRequest, basicv1.ImportResponse]
	buf    []byte
	err    error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		msg, err := r.stream.Recv()
		if err != nil {
			r.err = err
			continue
		}
		if msg.GetOptions() != nil {
			r.err = apperr.Invalid("options", "first", "options go in the first message only")
			continue
		}
		r.buf = msg.GetData()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (s *importServer) Import(stream grpc.ClientStreamingServer[basicv1.ImportRequest, basicv1.ImportResponse]) error {
	ctx := stream.Context()
	id := authn.FromContext(ctx)
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	opts := first.GetOptions()
	if opts == nil {
		return apperr.Invalid("options", "first", "the first message carries the options")
	}
	job, err := s.im.Run(ctx, ImportParams{TenantID: id.TenantID, UserID: id.UserID, Options: opts}, &chunkReader{stream: stream})
	if job != nil && job.GetId() > 0 {
		s.notify(ctx, job, err)
	}
	if err != nil {
		return err
	}
	return stream.SendAndClose(&basicv1.ImportResponse{Job: job})
}

// notify sends the job's result to the user who ran it (best effort).
func (s *importServer) notify(ctx context.Context, job *basicv1.ImportJob, err error) {
	id := authn.FromContext(ctx)
	if id == nil {
		return
	}
	n := notifyclient.Notification{Type: "import_result", Source: "basic.import", UserID: id.UserID, Level: notifyclient.LevelInfo}
	name := job.GetFileName()
	if name == "" {
		name = "file"
	}
	switch job.GetStatus() {
	case "failed":
		n.Level = notifyclient.LevelError
		n.Title = fmt.Sprintf("Import of %s failed", name)
		n.Content = fmt.Sprintf("Import job %d (%s, %s): %s. Rows stored before: %d.", job.GetId(), job.GetKind(), job.GetFormat(), errorText(err), job.GetRowsStored())
	default:
		if job.GetRowsRejected() > 0 {
			n.Level = notifyclient.LevelWarning
		}
		n.Title = fmt.Sprintf("Import of %s: %d rows stored, %d rejected", name, job.GetRowsStored(), job.GetRowsRejected())
		n.Content = fmt.Sprintf("Import job %d (%s, %s): %d orders created, %d updated, %d unchanged.", job.GetId(), job.GetKind(),
			job.GetFormat(), job.GetOrdersCreated(), job.GetOrdersUpdated(), job.GetOrdersUnchanged())
		for i, e := range job.GetErrors() {
			if i == 5 {
				n.Content += fmt.Sprintf("\n... and %d more rejected rows", job.GetRowsRejected()-5)
				break
			}
			n.Content += fmt.Sprintf("\nline %d (%s): %s", e.GetLine(), e.GetColumn(), e.GetReason())
		}
	}
	s.c.notify.Publish(context.WithoutCancel(ctx), n)
}

const jobColumns = `id, kind, format, encoding, status, file_name, rows_read, rows_stored, rows_rejected, orders_created,
	orders_updated, orders_unchanged, bytes_read, message, started_at, finished_at, shop_ids`

func scanJob(r pgx.Row) (*basicv1.ImportJob, error) {
	j := &basicv1.ImportJob{}
	var started time.Time
	var finished *time.Time
	err := r.Scan(&j.Id, &j.Kind, &j.Format, &j.Encoding, &j.Status, &j.FileName, &j.RowsRead, &j.RowsStored, &j.RowsRejected,
		&j.OrdersCreated, &j.OrdersUpdated, &j.OrdersUnchanged, &j.BytesRead, &j.Message, &started, &finished, &j.ShopIds)
	j.StartedAt = timestamppb.New(started)
	if finished != nil {
		j.FinishedAt = timestamppb.New(*finished)
	}
	return j, err
}

func (s *importServer) job(ctx context.Context, tenantID, id int64) (*basicv1.ImportJob, error) {
	j, err := scanJob(s.c.pool.QueryRow(ctx, "SELECT "+jobColumns+" FROM basic.import_jobs WHERE tenant_id = $1 AND id = $2", tenantID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.New(apperr.KindNotFound, "import job %d not found", id)
	}
	return j, err
}

func (s *importServer) GetImportJob(ctx context.Context, req *basicv1.GetImportJobRequest) (*basicv1.GetImportJobResponse, error) {
	id := authn.FromContext(ctx)
	j, err := s.job(ctx, id.TenantID, req.GetId())
	if err != nil {
		return nil, err
	}
	j.Errors, err = s.im.jobErrors(ctx, id.TenantID, j.Id, jobErrorsShown, 0)
	return &basicv1.GetImportJobResponse{Job: j}, err
}

func importPage(num, size, def int32) (int32, int32) {
	if num <= 0 {
		num = 1
	}
	if size <= 0 {
		size = def
	}
	return num, size
}

func (s *importServer) ListImportJobs(ctx context.Context, req *basicv1.ListImportJobsRequest) (*basicv1.ListImportJobsResponse, error) {
	id := authn.FromContext(ctx)
	num, size := importPage(req.GetPageNum(), req.GetPageSize(), 10)
	out := &basicv1.ListImportJobsResponse{PageNum: num, PageSize: size}
	if err := s.c.pool.QueryRow(ctx, "SELECT count(*) FROM basic.import_jobs WHERE tenant_id = $1", id.TenantID).Scan(&out.Total); err != nil {
		return nil, err
	}
	rows, err := s.c.pool.Query(ctx, "SELECT "+jobColumns+" FROM basic.import_jobs WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3",
		id.TenantID, size, int64(num-1)*int64(size))
	if err != nil {
		return nil, err
	}
	out.Items, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*basicv1.ImportJob, error) { return scanJob(r) })
	return out, err
}

func (s *importServer) ListImportErrors(ctx context.Context, req *basicv1.ListImportErrorsRequest) (*basicv1.ListImportErrorsResponse, error) {
	id := authn.FromContext(ctx)
	if _, err := s.job(ctx, id.TenantID, req.GetId()); err != nil {
		return nil, err
	}
	num, size := importPage(req.GetPageNum(), req.GetPageSize(), 100)
	out := &basicv1.ListImportErrorsResponse{PageNum: num, PageSize: size}
	if err := s.c.pool.QueryRow(ctx, "SELECT count(*) FROM basic.import_errors WHERE tenant_id = $1 AND job_id = $2", id.TenantID, req.GetId()).Scan(&out.Total); err != nil {
		return nil, err
	}
	var err error
	out.Items, err = s.im.jobErrors(ctx, id.TenantID, req.GetId(), int(size), int((num-1)*size))
	return out, err
}

// WatchImportJob polls the job (twice a second) and sends each change; the last event is
// the finished job.
func (s *importServer) WatchImportJob(req *basicv1.WatchImportJobRequest, stream grpc.ServerStreamingServer[basicv1.WatchImportJobResponse]) error {
	ctx := stream.Context()
	id := authn.FromContext(ctx)
	var last *basicv1.ImportJob
	offset := int64(0)
	for {
		j, err := s.job(ctx, id.TenantID, req.GetId())
		if err != nil {
			return err
		}
		if last == nil || !proto.Equal(last, j) {
			offset++
			if offset > req.GetAfter() {
				if err := stream.Send(&basicv1.WatchImportJobResponse{Offset: offset, Job: j}); err != nil {
					return err
				}
			}
			last = j
		}
		if j.GetFinishedAt() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// importUploadPath is the REST upload; {kind} is ImportOptions.kind.
const importUploadPath = "/api/v1/basic/imports/{kind}"

// uploadChunk is the size of the Import messages the upload handler sends.
const uploadChunk = 256 << 10

// registerUpload serves POST /api/v1/basic/imports/{kind}: the body streamed into the
// Import RPC (options from the query parameters), answered through the mux's envelope
// marshaler and error handler like every other route.
func registerUpload(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
	client := basicv1.NewImportServiceClient(conn)
	return mux.HandlePath(http.MethodPost, importUploadPath, func(w http.ResponseWriter, req *http.Request, params map[string]string) {
		_, outbound := runtime.MarshalerForRequest(mux, req)
		rctx, err := runtime.AnnotateContext(req.Context(), mux, req, "/shopmind.basic.v1.ImportService/Import",
			runtime.WithHTTPPathPattern(importUploadPath))
		if err != nil {
			runtime.HTTPError(req.Context(), mux, outbound, w, req, err)
			return
		}
		q := req.URL.Query()
		opts := &basicv1.ImportOptions{Kind: params["kind"], Format: q.Get("format"), ShopName: q.Get("shop_name"),
			Encoding: q.Get("encoding"), Mapping: q.Get("mapping"), FileName: q.Get("file_name")}
		if v := q.Get("shop_id"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				runtime.HTTPError(rctx, mux, outbound, w, req, apperr.Invalid("shop_id", "int64", "shop_id: not an integer").GRPCStatus().Err())
				return
			}
			opts.ShopId = n
		}
		if req.ContentLength > 0 {
			opts.DeclaredSize = req.ContentLength
		}
		job, md, err := upload(rctx, client, opts, req.Body)
		rctx = runtime.NewServerMetadataContext(rctx, md)
		if err != nil {
			runtime.HTTPError(rctx, mux, outbound, w, req, err)
			return
		}
		runtime.ForwardResponseMessage(rctx, mux, outbound, w, req, job)
	})
}

// upload sends the options, then the body in chunks, and returns the job.
func upload(ctx context.Context, client basicv1.ImportServiceClient, opts *basicv1.ImportOptions, body io.Reader) (*basicv1.ImportResponse, runtime.ServerMetadata, error) {
	var md runtime.ServerMetadata
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.Import(ctx, grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
	if err != nil {
		return nil, md, err
	}
	if err := stream.Send(&basicv1.ImportRequest{Part: &basicv1.ImportRequest_Options{Options: opts}}); err != nil {
		_, err = stream.CloseAndRecv()
		return nil, md, err
	}
	buf := make([]byte, uploadChunk)
	for {
		n, rerr := io.ReadFull(body, buf)
		if n > 0 {
			if err := stream.Send(&basicv1.ImportRequest{Part: &basicv1.ImportRequest_Data{Data: append([]byte(nil), buf[:n]...)}}); err != nil {
				// The service ended the call (a refusal, a failure): its answer says why.
				_, err = stream.CloseAndRecv()
				return nil, md, err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			var mbe *http.MaxBytesError
			if errors.As(rerr, &mbe) {
				return nil, md, apperr.New(apperr.KindTooLarge, "request body too large").GRPCStatus().Err()
			}
			return nil, md, apperr.New(apperr.KindInvalid, "reading the request body: %v", rerr).GRPCStatus().Err()
		}
	}
	resp, err := stream.CloseAndRecv()
	return resp, md, err
}

// importTopic is the real-time topic "import:<id>" (and GET .../imports/{id}/events as SSE).
func importTopic() restapi.Topic {
	st := restapi.ServerStream[*basicv1.WatchImportJobRequest, basicv1.WatchImportJobResponse]{
		StreamRoute: restapi.StreamRoute{Method: "GET", Path: "/api/v1/basic/imports/{id}/events",
			RPC: "/shopmind.basic.v1.ImportService/WatchImportJob", Resume: "after", Event: importEventDoc},
		Empty: func() *basicv1.WatchImportJobRequest { return &basicv1.WatchImportJobRequest{} },
		Call: func(ctx context.Context, conn grpc.ClientConnInterface, req *basicv1.WatchImportJobRequest) (grpc.ServerStreamingClient[basicv1.WatchImportJobResponse], error) {
			return basicv1.NewImportServiceClient(conn).WatchImportJob(ctx, req)
		},
		Convert: func(ev *basicv1.WatchImportJobResponse) (restapi.Event, error) { return importEvent{ev}, nil },
		Failure: func(id string, err error) restapi.Event {
			env := apperr.FromError(err)
			n, _ := strconv.ParseInt(id, 10, 64)
			return importEvent{&basicv1.WatchImportJobResponse{Job: &basicv1.ImportJob{Id: n, Status: "failed", Message: env.Message}}}
		},
	}
	return restapi.Topic{Kind: "import", Stream: st, IDField: "id"}
}

// importEvent is a WatchImportJobResponse as the gateway writes it (protojson, proto names).
type importEvent struct {
	*basicv1.WatchImportJobResponse
}

func (e importEvent) StreamID() string { return strconv.FormatInt(e.GetJob().GetId(), 10) }
func (e importEvent) Offset() int64    { return e.GetOffset() }
func (e importEvent) AppendJSON(buf []byte) ([]byte, error) {
	return pbjson.MarshalAppend(buf, e.WatchImportJobResponse)
}

var importEventDoc = restapi.EventDoc{Name: "shopmind.basic.v1.WatchImportJobResponse", Schema: `{"type":"object","description":"An import job's state: sent at once, on each change, and when it ends.","properties":{
"offset":{"type":"string","description":"grows from event to event (int64 as a string)"},
"job":{"type":"object","description":"the job (ImportJob, without its errors)","properties":{
"id":{"type":"string"},"kind":{"type":"string"},"format":{"type":"string"},"encoding":{"type":"string"},
"status":{"type":"string","enum":["running","succeeded","partial","failed"]},"file_name":{"type":"string"},
"rows_read":{"type":"string"},"rows_stored":{"type":"string"},"rows_rejected":{"type":"string"},
"orders_created":{"type":"string"},"orders_updated":{"type":"string"},"orders_unchanged":{"type":"string"},
"bytes_read":{"type":"string"},"message":{"type":"string"},"started_at":{"type":"string","format":"date-time"},
"finished_at":{"type":"string","format":"date-time"},"shop_ids":{"type":"array","items":{"type":"string"}}}}}}`}
