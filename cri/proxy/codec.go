package proxy

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// frame is one gRPC message as bytes: the proxy never decodes what it only
// forwards, so a field containerd or the kubelet added after this build
// passes through untouched.
type frame struct {
	data []byte
	// parts, when set, are the message's bytes in pieces the proxy sends
	// without joining them (a large ExecSync reply is not copied again).
	parts [][]byte
}

// rawCodec moves frames without (un)marshalling. Its name is empty so that
// forwarded calls say content-type application/grpc, as the kubelet's do:
// CRI-O's socket (cmux) matches a connection by its first call's
// content-type, exactly, and drops it — and every call on it — for
// application/grpc+proto, the type a codec named "proto" would send.
type rawCodec struct{}

var _ encoding.CodecV2 = rawCodec{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("proxy codec: cannot marshal %T", v)
	}
	if f.parts == nil {
		return mem.BufferSlice{mem.SliceBuffer(f.data)}, nil
	}
	bs := make(mem.BufferSlice, len(f.parts))
	for i, p := range f.parts {
		bs[i] = mem.SliceBuffer(p)
	}
	return bs, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("proxy codec: cannot unmarshal into %T", v)
	}
	f.data = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "" }
