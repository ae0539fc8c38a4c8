package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// maxVerifying bounds the comparisons in flight: shadow mode must not
	// double containerd's load on a busy node; answers beyond it are
	// served unchecked (counted as skipped).
	maxVerifying = 4
	// verifyTimeout bounds one fresh read.
	verifyTimeout = 10 * time.Second
)

// verifier is shadow mode: it compares cached answers with containerd's
// fresh answer to the same request. Answers that differ are normal for a
// moment (containerd changed just before the fresh read and its event is
// on the way); a difference counts as a mismatch only when the memo still
// holds the cached answer the settle time after containerd answered
// differently: an answer the proxy kept serving after containerd
// had moved on and said so.
type verifier struct {
	p     *Proxy
	slots chan struct{}
}

func newVerifier(p *Proxy) *verifier {
	return &verifier{p: p, slots: make(chan struct{}, maxVerifying)}
}

// check compares e, just served for key, in the background.
func (v *verifier) check(method string, req []byte, key string, e *entry) {
	select {
	case v.slots <- struct{}{}:
	default:
		v.p.m.verify.WithLabelValues(verifySkipped).Inc()
		return
	}
	go func() {
		defer func() { <-v.slots }()
		v.p.m.verify.WithLabelValues(v.compare(method, req, e)).Inc()
	}()
}

func (v *verifier) compare(method string, req []byte, e *entry) string {
	ctx, cancel := context.WithTimeout(context.Background(), verifyTimeout)
	defer cancel()
	fresh, _, _, err := v.p.invoke(ctx, method, req)
	if err != nil && status.Code(err) != codes.NotFound {
		return verifyError
	}
	if err == nil && same(method, e.resp, fresh) {
		return verifyMatch
	}
	select {
	case <-e.dropped:
		return verifySettled
	case <-v.p.clock.After(v.p.settle):
	}
	select {
	case <-e.dropped:
		return verifySettled
	default:
	}
	v.p.m.mismatch.Inc()
	freshText := "error: " + status.Convert(err).Message()
	if err == nil {
		freshText = text(method, fresh)
	}
	v.p.log.Error("CRI proxy answer differs from the runtime's", zap.String("method", methodLabel(method)),
		zap.String("request", text(requestOf(method), req)), zap.String("cached", text(method, e.resp)),
		zap.String("runtime", freshText), zap.Duration("settle", v.p.settle))
	return verifyMismatch
}

// same compares two answers to one request as the kubelet reads them:
// list items in any order (containerd lists from a map, so its own order
// changes from call to call), the verbose info's JSON by its content
// (CRI-O writes its maps in a different order on each call), a status's
// timestamp not at all (CRI-O stamps each answer with the time of the
// call), everything else exactly.
func same(method string, a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	x, y := newResponse(method), newResponse(method)
	if x == nil || proto.Unmarshal(a, x) != nil || proto.Unmarshal(b, y) != nil {
		return false
	}
	normalize(x)
	normalize(y)
	return proto.Equal(x, y)
}

// normalize puts an answer in the form same compares: items sorted, no
// timestamp, the info's JSON values re-encoded with sorted keys.
func normalize(m proto.Message) {
	sortItems(m)
	switch r := m.(type) {
	case *runtimeapi.PodSandboxStatusResponse:
		r.Timestamp = 0
		canonicalInfo(r.Info)
	case *runtimeapi.ContainerStatusResponse:
		canonicalInfo(r.Info)
	}
}

// canonicalInfo re-encodes each JSON value of a verbose info map (Go's
// encoder sorts map keys); a value that is not JSON stays as it is.
func canonicalInfo(info map[string]string) {
	for k, v := range info {
		var decoded any
		if json.Unmarshal([]byte(v), &decoded) != nil {
			continue
		}
		if b, err := json.Marshal(decoded); err == nil {
			info[k] = string(b)
		}
	}
}

func newResponse(method string) proto.Message {
	switch method {
	case mListPodSandbox:
		return &runtimeapi.ListPodSandboxResponse{}
	case mListContainers:
		return &runtimeapi.ListContainersResponse{}
	case mPodSandboxStatus:
		return &runtimeapi.PodSandboxStatusResponse{}
	case mContainerStatus:
		return &runtimeapi.ContainerStatusResponse{}
	}
	return nil
}

func sortItems(m proto.Message) {
	switch r := m.(type) {
	case *runtimeapi.ListPodSandboxResponse:
		slices.SortFunc(r.Items, func(a, b *runtimeapi.PodSandbox) int { return strings.Compare(a.GetId(), b.GetId()) })
	case *runtimeapi.ListContainersResponse:
		slices.SortFunc(r.Containers, func(a, b *runtimeapi.Container) int { return strings.Compare(a.GetId(), b.GetId()) })
	}
}

// requestOf names the request type of a cached method, for logs.
func requestOf(method string) string { return method + "#request" }

// text renders an answer (or, for requestOf, a request) for a log line.
func text(method string, data []byte) string {
	var m proto.Message
	switch method {
	case requestOf(mListPodSandbox):
		m = &runtimeapi.ListPodSandboxRequest{}
	case requestOf(mListContainers):
		m = &runtimeapi.ListContainersRequest{}
	case requestOf(mPodSandboxStatus):
		m = &runtimeapi.PodSandboxStatusRequest{}
	case requestOf(mContainerStatus):
		m = &runtimeapi.ContainerStatusRequest{}
	default:
		m = newResponse(method)
	}
	if m == nil || proto.Unmarshal(data, m) != nil {
		return string(data)
	}
	sortItems(m)
	return protojson.Format(m)
}
