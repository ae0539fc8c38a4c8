package grpcwire

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestTooLarge(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"grpcwire's", errTooLarge(5<<20, 4<<20), true},
		{"grpc-go's words", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (16777217 vs. 16777216)"), true},
		{"wrapped", fmt.Errorf("exec: %w", errTooLarge(2, 1)), true},
		{"another ResourceExhausted", status.Error(codes.ResourceExhausted, "quota exceeded"), false},
		{"the words under another code", status.Error(codes.Internal, msgTooLarge), false},
		{"not a status", errors.New(msgTooLarge), false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		if got := TooLarge(tc.err); got != tc.want {
			t.Errorf("%s: TooLarge(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
