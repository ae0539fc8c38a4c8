package tracker

import "testing"

func TestFeaturesUsableAndString(t *testing.T) {
	tests := []struct {
		in         Features
		wantUsable Features
		wantString string
	}{
		{NoFeatures, NoFeatures, "none"},
		{AllFeatures, AllFeatures, "sock_from_file,tracing_cookie,snapshot_cookie"},
		{SockFromFile | TracingCookie, SockFromFile | TracingCookie, "sock_from_file,tracing_cookie"},
		// The snapshot's cookie needs both of the capabilities it builds on.
		{SnapshotCookie, NoFeatures, "snapshot_cookie"},
		{SnapshotCookie | SockFromFile, SockFromFile, "sock_from_file,snapshot_cookie"},
		{SnapshotCookie | TracingCookie, TracingCookie, "tracing_cookie,snapshot_cookie"},
	}
	for _, tt := range tests {
		if got := tt.in.usable(); got != tt.wantUsable {
			t.Errorf("%s.usable() = %s, want %s", tt.in, got, tt.wantUsable)
		}
		if got := tt.in.String(); got != tt.wantString {
			t.Errorf("String() = %q, want %q", got, tt.wantString)
		}
	}
}
