package proxy

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The direct executor's reply, sent in parts, is the bytes proto.Marshal
// writes, and its size is computed without them.
func TestEncodeExecSyncIsProtoMarshal(t *testing.T) {
	big := bytes.Repeat([]byte{'y'}, 300)
	for _, tc := range []struct {
		name           string
		stdout, stderr []byte
		code           int32
	}{
		{"empty", nil, nil, 0},
		{"stdout", []byte("ok\n"), nil, 0},
		{"stderr and a code", nil, []byte("no"), 1},
		{"both, a long one", big, []byte("e"), 2},
		{"negative code", []byte("x"), nil, -1},
		{"the largest code", nil, nil, 1<<31 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&runtimeapi.ExecSyncResponse{Stdout: tc.stdout, Stderr: tc.stderr, ExitCode: tc.code})
			if err != nil {
				t.Fatal(err)
			}
			f := encodeExecSync(tc.stdout, tc.stderr, tc.code)
			if got := bytes.Join(f.parts, nil); !bytes.Equal(got, want) {
				t.Errorf("encoded % x, proto.Marshal % x", got, want)
			}
			if n := sizeExecSync(len(tc.stdout), len(tc.stderr), tc.code); n != len(want) {
				t.Errorf("sizeExecSync %d, want %d", n, len(want))
			}
		})
	}
}
