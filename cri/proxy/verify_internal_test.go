package proxy

import (
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Shadow mode compares answers as the kubelet reads them: CRI-O stamps
// each status with the call's time and writes its info's maps in any
// order; neither is a difference. Anything else in the info is.
func TestSameIgnoresWhatChangesPerCall(t *testing.T) {
	status := func(ts int64, info string) []byte {
		b, err := proto.Marshal(&runtimeapi.PodSandboxStatusResponse{
			Status:    &runtimeapi.PodSandboxStatus{Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY},
			Info:      map[string]string{"info": info},
			Timestamp: ts,
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		a, b []byte
		want bool
	}{
		{"identical", status(1, `{"a":1,"b":2}`), status(1, `{"a":1,"b":2}`), true},
		{"another timestamp", status(1, `{"a":1}`), status(2, `{"a":1}`), true},
		{"map keys in another order", status(1, `{"a":1,"b":{"x":1,"y":2}}`), status(1, `{"b":{"y":2,"x":1},"a":1}`), true},
		{"another value", status(1, `{"a":1}`), status(1, `{"a":2}`), false},
		{"not JSON, different", status(1, `pid 1`), status(1, `pid 2`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := same(mPodSandboxStatus, tc.a, tc.b); got != tc.want {
				t.Errorf("same = %v, want %v", got, tc.want)
			}
		})
	}
}
