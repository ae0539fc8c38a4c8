package webhook

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

// Reviews are read a bounded number at a time: a large one past
// MaxReadingLarge is refused at once, unread (the API server admits the
// pod as it is), while a small one waits for its turn, and one whose API
// server gave up first is never read.
func TestReviewsReadTheirTurn(t *testing.T) {
	h := &Handler{Admissions: NewAdmissions()}
	post := func(ctx context.Context, size int) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, Path, &unread{n: size})
		r.Header.Set("Content-Type", "application/json")
		r.ContentLength = int64(size)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	h.init()
	for range MaxReadingLarge {
		h.readingLarge <- struct{}{}
	}
	if w := post(context.Background(), 3<<20); w.Code != http.StatusTooManyRequests {
		t.Fatalf("a large review with every large turn taken: %d %q, want 429", w.Code, w.Body)
	}
	if n := testutil.ToFloat64(h.Admissions.WithLabelValues(ResultTooLarge)); n != 1 {
		t.Fatalf("too_large counted %v times, want 1", n)
	}
	for range MaxReading {
		h.reading <- struct{}{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	body := &unread{n: 10 << 10}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, Path, body)
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = int64(body.n)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if body.read {
		t.Fatal("a small review was read with every turn taken and its caller gone")
	}
	if n := testutil.ToFloat64(h.Admissions.WithLabelValues(ResultTooLarge)); n != 1 {
		t.Fatalf("the small review counted as too large")
	}
}

// unread is a request body of n bytes that records whether it was read.
type unread struct {
	n    int
	read bool
}

func (u *unread) Read(p []byte) (int, error) {
	u.read = true
	if u.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), u.n)
	u.n -= k
	return k, nil
}
