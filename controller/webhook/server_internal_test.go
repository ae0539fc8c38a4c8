package webhook

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Conversions beyond MaxConcurrent wait for a turn, and one whose API
// server gave up before its turn came is admitted as it is, unparsed.
func TestConversionsWaitTheirTurn(t *testing.T) {
	web, err := os.ReadFile(filepath.Join("testdata", "web.json"))
	if err != nil {
		t.Fatal(err)
	}
	req := &admissionv1.AdmissionRequest{UID: "uid-1", Namespace: "shop", Operation: admissionv1.Create,
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: web}}
	h := &Handler{}
	if _, result := h.review(context.Background(), req); result != ResultMutated {
		t.Fatalf("result %s, want %s", result, ResultMutated)
	}
	for range MaxConcurrent {
		h.turns <- struct{}{} // every turn taken
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if resp, result := h.review(ctx, req); result != ResultError || !resp.Allowed || resp.Patch != nil {
		t.Fatalf("with every turn taken and the caller gone: result %s, response %+v; want admitted as it is", result, resp)
	}
	<-h.turns
	if _, result := h.review(context.Background(), req); result != ResultMutated {
		t.Fatalf("with a turn free: result %s, want %s", result, ResultMutated)
	}
}
