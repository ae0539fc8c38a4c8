package proxy

import (
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// bidi describes any method: the forwarder does not need to know whether
// a call is unary or streaming, it pumps frames both ways until both sides
// are done.
var bidi = &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

// outgoing returns a context for the runtime call that carries the
// caller's metadata (and, by being derived from the caller's context, its
// deadline and cancellation). Pseudo-headers and gRPC's own headers are
// the transport's business and are set again by the client.
func outgoing(ctx context.Context) context.Context {
	in, _ := metadata.FromIncomingContext(ctx)
	return metadata.NewOutgoingContext(ctx, userMD(in))
}

// userMD is md without what the transport sets itself.
func userMD(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, v := range md {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") {
			continue
		}
		switch k {
		case "content-type", "user-agent", "te", "connection":
			continue
		}
		out[k] = v
	}
	return out
}

// forward relays one call of any shape to the runtime: request frames
// up, response frames, header and trailer metadata down, and the
// runtime's final status (code, message, details) as the call's own.
func (p *Proxy) forward(ss grpc.ServerStream, method string) error {
	ctx, cancel := context.WithCancel(outgoing(ss.Context()))
	defer cancel()
	cs, err := p.conn.NewStream(ctx, bidi, method, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return err
	}
	upDone := make(chan struct{})
	go func() {
		defer close(upDone)
		p.pumpUp(ss, cs, cancel)
	}()
	err = p.pumpDown(ss, cs)
	if err != nil {
		// The caller is gone or the runtime failed: stop the up pump.
		cancel()
	}
	<-upDone
	return err
}

// pumpUp copies the caller's frames to the runtime and half-closes when
// the caller has sent everything. A caller that breaks off cancels the
// runtime call.
func (p *Proxy) pumpUp(ss grpc.ServerStream, cs grpc.ClientStream, cancel context.CancelFunc) {
	for {
		f := &frame{}
		if err := ss.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				_ = cs.CloseSend()
				return
			}
			cancel()
			return
		}
		if err := cs.SendMsg(f); err != nil {
			// The runtime ended the call; pumpDown gets its status.
			return
		}
	}
}

// pumpDown copies the runtime's frames to the caller, then its trailer
// and status.
func (p *Proxy) pumpDown(ss grpc.ServerStream, cs grpc.ClientStream) error {
	first := true
	for {
		f := &frame{}
		err := cs.RecvMsg(f)
		if first {
			first = false
			// Header() does not block once a message or the status
			// arrived.
			if md, herr := cs.Header(); herr == nil && len(userMD(md)) > 0 && err == nil {
				if serr := ss.SendHeader(userMD(md)); serr != nil {
					return serr
				}
			}
		}
		if err != nil {
			ss.SetTrailer(userMD(cs.Trailer()))
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(f); err != nil {
			return err
		}
	}
}

// invoke makes one unary call with the caller's bytes and returns the
// runtime's bytes, header and trailer.
func (p *Proxy) invoke(ctx context.Context, method string, req []byte) (resp []byte, header, trailer metadata.MD, err error) {
	out := &frame{}
	err = p.conn.Invoke(ctx, method, &frame{data: req}, out,
		grpc.ForceCodecV2(rawCodec{}), grpc.Header(&header), grpc.Trailer(&trailer))
	return out.data, userMD(header), userMD(trailer), err
}
