package grpcserver

import (
	"context"
	"errors"

	"buf.build/go/protovalidate"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/inputcheck"
)

// validator checks every request message against its protovalidate rules, so REST and gRPC
// callers meet exactly the same rules and the same 400.
type validator struct{ v protovalidate.Validator }

func newValidator() (*validator, error) {
	v, err := protovalidate.New()
	if err != nil {
		return nil, err
	}
	return &validator{v: v}, nil
}

// check returns nil or a 400 *apperr.Error naming each offending field and rule: first
// what the stores cannot hold (NUL, invalid UTF-8, undecodable bytes), then the contract's
// rules.
func (v *validator) check(msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	if err := inputcheck.Check(m); err != nil {
		return err
	}
	err := v.v.Validate(m)
	if err == nil {
		return nil
	}
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		return apperr.Internal(err)
	}
	violations := make([]apperr.FieldViolation, 0, len(verr.Violations))
	for _, viol := range verr.Violations {
		p := viol.Proto
		field := protovalidate.FieldPathString(p.GetField())
		violations = append(violations, apperr.FieldViolation{Field: field, Rule: p.GetRuleId(), Message: p.GetMessage()})
	}
	return apperr.InvalidFields(violations)
}

func (v *validator) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := v.check(req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (v *validator) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &validatingStream{ServerStream: ss, v: v})
}

type validatingStream struct {
	grpc.ServerStream
	v *validator
}

func (s *validatingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.v.check(m)
}
