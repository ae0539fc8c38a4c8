package proxy

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// frame is one gRPC message as bytes: the proxy never decodes what it only
// forwards, so a field containerd or the kubelet added after this build
// passes through untouched.
type frame struct{ data []byte }

// rawCodec moves frames without (un)marshalling. It calls itself "proto" so
// the content-type on both hops stays application/grpc+proto.
type rawCodec struct{}

var _ encoding.CodecV2 = rawCodec{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("proxy codec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.data)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("proxy codec: cannot unmarshal into %T", v)
	}
	f.data = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }
