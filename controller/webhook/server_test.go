package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probelet/probelet/controller/webhook"
	"github.com/probelet/probelet/probespec"
)

func review(op admissionv1.Operation, ns, resource string, obj []byte) []byte {
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("uid-" + string(op)), Operation: op, Namespace: ns, Name: "web",
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: resource},
			Object:   runtime.RawExtension{Raw: obj}},
	}
	data, _ := json.Marshal(r)
	return data
}

func TestHandler(t *testing.T) {
	h := &webhook.Handler{Exclude: []string{"kube-system", "probelet-system"}, Admissions: webhook.NewAdmissions(),
		Durations: webhook.NewDurations()}
	srv := httptest.NewServer(h)
	defer srv.Close()
	web, foreign := fixture(t, "web.json"), fixture(t, "foreign-host.json")
	tests := []struct {
		name        string
		contentType string
		body        []byte
		wantStatus  int
		wantPatch   bool
		wantWarning string
		wantResult  string
	}{
		{name: "a pod with probes created", body: review(admissionv1.Create, "shop", "pods", web), wantPatch: true, wantResult: webhook.ResultMutated},
		{name: "a pod updated", body: review(admissionv1.Update, "shop", "pods", web), wantResult: webhook.ResultSkipped},
		{name: "kube-system", body: review(admissionv1.Create, "kube-system", "pods", web), wantResult: webhook.ResultSkipped},
		{name: "probelet's namespace", body: review(admissionv1.Create, "probelet-system", "pods", web), wantResult: webhook.ResultSkipped},
		{name: "not pods", body: review(admissionv1.Create, "shop", "deployments", web), wantResult: webhook.ResultSkipped},
		{name: "a pod without probes", body: review(admissionv1.Create, "shop", "pods", fixture(t, "no-probes.json")), wantResult: webhook.ResultUnchanged},
		{name: "a probe probelet refuses", body: review(admissionv1.Create, "shop", "pods", foreign),
			wantWarning: "keeps its kubelet probes", wantResult: webhook.ResultRefused},
		{name: "a pod that cannot be read", body: review(admissionv1.Create, "shop", "pods", []byte(`{"spec": 1}`)),
			wantWarning: "keeps its kubelet probes", wantResult: webhook.ResultError},
		{name: "a pod over the size the webhook parses", body: review(admissionv1.Create, "shop", "pods", padded(t, web, webhook.MaxObject)),
			wantWarning: "over the 262144 the webhook converts", wantResult: webhook.ResultTooLarge},
		{name: "a pod that opts out", body: review(admissionv1.Create, "shop", "pods", labelled(t, web, probespec.LabelUnmanaged)),
			wantResult: webhook.ResultOptedOut},
		{name: "not a review", body: []byte(`{"kind": "AdmissionReview"}`), wantStatus: http.StatusBadRequest, wantResult: webhook.ResultError},
		{name: "not JSON", contentType: "text/plain", body: web, wantStatus: http.StatusUnsupportedMediaType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := tt.contentType
			if ct == "" {
				ct = "application/json"
			}
			var before float64
			if tt.wantResult != "" {
				before = testutil.ToFloat64(h.Admissions.WithLabelValues(tt.wantResult))
			}
			resp, err := http.Post(srv.URL+webhook.Path, ct, bytes.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			want := tt.wantStatus
			if want == 0 {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Fatalf("status %d, want %d", resp.StatusCode, want)
			}
			if tt.wantResult != "" && testutil.ToFloat64(h.Admissions.WithLabelValues(tt.wantResult)) != before+1 {
				t.Errorf("not counted as %s", tt.wantResult)
			}
			if want != http.StatusOK {
				return
			}
			var out admissionv1.AdmissionReview
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			r := out.Response
			switch {
			case r == nil || !r.Allowed || !strings.HasPrefix(string(r.UID), "uid-"):
				t.Fatalf("response %+v, want allowed, the request's UID", r)
			case out.Kind != "AdmissionReview" || out.APIVersion != "admission.k8s.io/v1" || out.Request != nil:
				t.Fatalf("review %s %s, request %v: want the review's type back, without the request", out.APIVersion, out.Kind, out.Request)
			case tt.wantPatch != (r.Patch != nil) || (r.Patch != nil) != (r.PatchType != nil):
				t.Fatalf("patch %s (%v), want a patch: %v", r.Patch, r.PatchType, tt.wantPatch)
			case tt.wantWarning == "" && len(r.Warnings) > 0, tt.wantWarning != "" && (len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], tt.wantWarning)):
				t.Fatalf("warnings %q, want %q", r.Warnings, tt.wantWarning)
			}
		})
	}
	// Every review is timed, answered or refused.
	var m dto.Metric
	if err := h.Durations.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetHistogram().GetSampleCount(); n != uint64(len(tests)) {
		t.Errorf("%d reviews timed, want %d", n, len(tests))
	}
}

// padded is pod with an annotation that makes it more than n bytes.
func padded(t *testing.T, pod []byte, n int) []byte {
	return withMeta(t, pod, "annotations", map[string]any{"example.com/blob": strings.Repeat("x", n)})
}

// labelled is pod with the probelet.io/probes label set to value.
func labelled(t *testing.T, pod []byte, value string) []byte {
	return withMeta(t, pod, "labels", map[string]any{probespec.LabelProbes: value})
}

// withMeta is pod with metadata[key] set to value.
func withMeta(t *testing.T, pod []byte, key string, value any) []byte {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(pod, &obj); err != nil {
		t.Fatal(err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	meta[key] = value
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
