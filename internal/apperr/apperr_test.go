package apperr

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Every kind survives the gRPC hop with its envelope code.
func TestKindsRoundTripThroughStatus(t *testing.T) {
	for kind, info := range kinds {
		err := New(kind, "x")
		st := status.Convert(err) // what a gRPC client receives
		if st.Code() != info.grpcCode {
			t.Errorf("kind %d: grpc code %v, want %v", kind, st.Code(), info.grpcCode)
		}
		if got := FromStatus(st).Code; got != info.envelope {
			t.Errorf("kind %d: envelope %d, want %d", kind, got, info.envelope)
		}
	}
}

func TestBareCodes(t *testing.T) {
	cases := map[codes.Code]int{
		codes.InvalidArgument: 400, codes.Unauthenticated: 401, codes.PermissionDenied: 403,
		codes.NotFound: 404, codes.AlreadyExists: 409, codes.FailedPrecondition: 422,
		codes.ResourceExhausted: 429, codes.Unimplemented: 501, codes.Unavailable: 503,
		codes.DeadlineExceeded: 504, codes.Internal: 500, codes.Unknown: 500, codes.Canceled: 408,
	}
	for c, want := range cases {
		if got := FromStatus(status.New(c, "m")).Code; got != want {
			t.Errorf("%v: %d, want %d", c, got, want)
		}
	}
}

func TestDetailsAndMessages(t *testing.T) {
	err := &Error{Kind: KindTooManyRequests, Message: "locked for 14m", RetryAfter: 90 * time.Second}
	env := FromError(fmt.Errorf("wrapped: %w", err))
	if env.Code != 429 || env.RetryAfter != 90*time.Second || env.Message != "locked for 14m" {
		t.Fatalf("%+v", env)
	}
	inv := InvalidFields([]FieldViolation{{Field: "page_size", Rule: "page_size", Message: "must be between 1 and 100"}, {Message: "start_time must be earlier than end_time", Rule: "time_range"}})
	env = FromError(inv)
	if env.Code != 400 || env.Message != "invalid request: page_size: must be between 1 and 100 (rule page_size); start_time must be earlier than end_time (rule time_range)" || len(env.Violations) != 2 {
		t.Fatalf("%+v", env)
	}
	env = FromError(Internal(errors.New("db password is hunter2")))
	if env.Code != 500 || env.Message != "internal server error" {
		t.Fatalf("internal detail leaked: %+v", env)
	}
	env = FromStatus(status.New(codes.InvalidArgument, `proto: (line 1:13): invalid value for int32 field pageNum: "x"`))
	if env.Message != `malformed request: proto: (line 1:13): invalid value for int32 field page_num: "x"` {
		t.Fatalf("%q", env.Message)
	}
}
