package probespec_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/probespec"
)

func TestExpandCommand(t *testing.T) {
	env := []corev1.EnvVar{{Name: "HOME", Value: "/root"}, {Name: "PORT", Value: "8080"}, {Name: "EMPTY"},
		{Name: "DUP", Value: "first"}, {Name: "DUP", Value: "second"}, {Name: "A", Value: "$(PORT)"},
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"plain text unchanged", []string{"cat", "/tmp/ok"}, []string{"cat", "/tmp/ok"}},
		{"variable", []string{"curl", "localhost:$(PORT)/healthz"}, []string{"curl", "localhost:8080/healthz"}},
		{"several in one argument", []string{"$(HOME)$(PORT)"}, []string{"/root8080"}},
		{"empty value", []string{"x$(EMPTY)y"}, []string{"xy"}},
		{"unresolved left as is", []string{"$(MISSING)", "a$(NOEQUALS)b"}, []string{"$(MISSING)", "a$(NOEQUALS)b"}},
		// The kubelet maps every entry to its Value: a valueFrom variable
		// is known and empty (its source is never read).
		{"valueFrom variables expand to their static Value, never their source", []string{"x$(POD)y"}, []string{"xy"}},
		{"last entry for a key wins", []string{"$(DUP)"}, []string{"second"}},
		{"values are not expanded again", []string{"$(A)"}, []string{"$(PORT)"}},
		{"dollar dollar escapes", []string{"$$(PORT)", "a$$b", "$$$$"}, []string{"$(PORT)", "a$b", "$$"}},
		{"unterminated left as is; a reference ends at the first )", []string{"$(PORT", "x$(", "$(A$(PORT)"}, []string{"$(PORT", "x$(", "$(A$(PORT)"}},
		{"lone dollar", []string{"$", "a$", "$x", "cost: $5"}, []string{"$", "a$", "$x", "cost: $5"}},
		{"empty reference", []string{"$()"}, []string{"$()"}},
		{"shell variables untouched", []string{"sh", "-c", "echo $HOME ${PORT}"}, []string{"sh", "-c", "echo $HOME ${PORT}"}},
		{"multibyte after dollar kept", []string{"$é$(PORT)"}, []string{"$é8080"}},
		{"invalid UTF-8 after dollar becomes U+FFFD like the kubelet", []string{"$\xff"}, []string{"$\uFFFD"}},
		{"nil", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got := probespec.ExpandCommand(tc.in, env)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ExpandCommand(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("input modified: %q", tc.in)
			}
		})
	}
}

func TestExpandCommand_NoEnvironmentLeavesReferences(t *testing.T) {
	t.Setenv("PROBELET_TEST_VAR", "from-the-agent")
	got := probespec.ExpandCommand([]string{"$(PROBELET_TEST_VAR)"}, nil)
	if got[0] != "$(PROBELET_TEST_VAR)" {
		t.Errorf("expanded from the agent's own environment: %q", got)
	}
}
