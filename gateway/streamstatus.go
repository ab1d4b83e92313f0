package gateway

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// earlyStatusStream makes a server stream that fails before its first message report the
// failure from Header(), so grpc-gateway's generated handlers answer it as an ordinary error
// envelope with its real HTTP status. grpc-go's Header() swallows that status (it returns
// no header and no error, leaving the status to Recv), after which grpc-gateway would have
// written a 200-or-other status line and an {"error": ...} chunk as if it were data.
//
// When the backend sent no header, Header() reads the first message into a fresh message of
// the method's response type; an error is returned, a message is kept for the first
// RecvMsg.
type earlyStatusStream struct {
	grpc.ClientStream
	method string

	once    sync.Once
	peeked  proto.Message // first message, read by Header()
	peekErr error         // io.EOF or the stream's status, read by Header()
}

func (s *earlyStatusStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if md != nil || err != nil {
		return md, err
	}
	out := responseType(s.method)
	if out == nil {
		return nil, nil
	}
	s.once.Do(func() {
		m := out.New().Interface()
		if err := s.ClientStream.RecvMsg(m); err != nil {
			s.peekErr = err
			return
		}
		s.peeked = m
	})
	if s.peekErr != nil && !errors.Is(s.peekErr, io.EOF) {
		return nil, s.peekErr
	}
	return nil, nil
}

func (s *earlyStatusStream) RecvMsg(m any) error {
	if s.peeked != nil {
		pm, ok := m.(proto.Message)
		if !ok {
			return errors.New("gateway: stream message is not a protobuf message")
		}
		proto.Reset(pm)
		proto.Merge(pm, s.peeked)
		s.peeked = nil
		return nil
	}
	if s.peekErr != nil {
		err := s.peekErr
		s.peekErr = nil
		return err
	}
	return s.ClientStream.RecvMsg(m)
}

// responseType is the response message type of a full method name ("/pkg.Service/Method").
func responseType(method string) protoreflect.MessageType {
	svc, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !ok {
		return nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil
	}
	return mt
}

// openStream opens a stream on conn; server streams get earlyStatusStream.
func openStream(ctx context.Context, conn grpc.ClientConnInterface, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := conn.NewStream(ctx, desc, method, opts...)
	if err != nil || !desc.ServerStreams || desc.ClientStreams {
		return s, err
	}
	return &earlyStatusStream{ClientStream: s, method: method}, nil
}
