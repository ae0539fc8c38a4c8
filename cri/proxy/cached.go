package proxy

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// serveCached answers a relist read: from the memo when it holds
// containerd's answer to these exact request bytes, else from containerd
// (and keeps the answer when nothing changed meanwhile).
func (p *Proxy) serveCached(ss grpc.ServerStream, method string) error {
	req := &frame{}
	if err := ss.RecvMsg(req); err != nil {
		return err
	}
	key := memoKey(method, req.data)
	if e, ok := p.memo.get(key); ok {
		p.m.calls.WithLabelValues(methodLabel(method), servedMemo).Inc()
		if p.verif != nil {
			p.verif.check(method, req.data, key, e)
		}
		return ss.SendMsg(&frame{data: e.resp})
	}
	p.m.calls.WithLabelValues(methodLabel(method), servedRuntime).Inc()
	resp, header, trailer, err := p.read(outgoing(ss.Context()), method, req.data)
	return answer(ss, resp, header, trailer, err)
}

// answer sends the caller the runtime's answer to a unary call: its
// header and trailer metadata, then its response or its error.
func answer(ss grpc.ServerStream, resp []byte, header, trailer metadata.MD, err error) error {
	if len(header) > 0 {
		if herr := ss.SendHeader(header); herr != nil {
			return herr
		}
	}
	ss.SetTrailer(trailer)
	if err != nil {
		return err
	}
	return ss.SendMsg(&frame{data: resp})
}

// read asks containerd and stores the answer if nothing changed while it
// was in flight. An error drops the memo: whatever failed, nothing cached
// may outlive it.
func (p *Proxy) read(ctx context.Context, method string, req []byte) ([]byte, metadata.MD, metadata.MD, error) {
	gen := p.memo.begin()
	resp, header, trailer, err := p.invoke(ctx, method, req)
	if err != nil {
		// NotFound is the ordinary answer about a removed sandbox or
		// container, which lists may still show; anything else may
		// mean containerd lost state.
		if status.Code(err) == codes.NotFound {
			p.memo.invalidate()
		} else {
			p.memo.flush()
		}
		p.m.invalidations.WithLabelValues(sourceError).Inc()
		return nil, header, trailer, err
	}
	// An answer with metadata is forwarded, not kept: a hit could not
	// repeat it.
	if len(header) == 0 && len(trailer) == 0 {
		if id, ok := keepable(method, resp); ok {
			p.memo.put(memoKey(method, req), resp, id, gen)
		}
	}
	return resp, header, trailer, nil
}

// keepable returns the full sandbox or container ID a status answer is
// about (the index that invalidation uses; lists have none) and whether
// the answer may be kept: not when it does not decode, and not when it
// shows a sandbox between its stop and its network's teardown (NOTREADY
// with an address): containerd clears the address when the teardown
// ends, and announces no event for it.
func keepable(method string, resp []byte) (string, bool) {
	switch method {
	case mPodSandboxStatus:
		var r runtimeapi.PodSandboxStatusResponse
		if err := proto.Unmarshal(resp, &r); err != nil || r.GetStatus().GetId() == "" {
			return "", false
		}
		st := r.GetStatus()
		if st.GetState() == runtimeapi.PodSandboxState_SANDBOX_NOTREADY && st.GetNetwork().GetIp() != "" {
			return "", false
		}
		return st.GetId(), true
	case mContainerStatus:
		var r runtimeapi.ContainerStatusResponse
		if err := proto.Unmarshal(resp, &r); err != nil || r.GetStatus().GetId() == "" {
			return "", false
		}
		return r.GetStatus().GetId(), true
	}
	return "", true
}

// typedRead is a relist read made by probelet itself (the announcer, a
// resync): it goes through the memo like the kubelet's, so it both reuses
// and fills it.
func (p *Proxy) typedRead(ctx context.Context, method string, req, resp proto.Message) error {
	data, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	if e, ok := p.memo.get(memoKey(method, data)); ok {
		return proto.Unmarshal(e.resp, resp)
	}
	raw, _, _, err := p.read(ctx, method, data)
	if err != nil {
		return err
	}
	return proto.Unmarshal(raw, resp)
}
