package testbed

import "strings"

// verdict is what Start does when the bed cannot run.
type verdict int

const (
	verdictRun verdict = iota
	verdictSkip
	verdictFail
)

// mustRun reports whether the environment demands the end-to-end tests:
// CI is set (to anything but false/0) or PROBELET_E2E=1.
func mustRun(getenv func(string) string) bool {
	ci := strings.ToLower(strings.TrimSpace(getenv("CI")))
	return (ci != "" && ci != "false" && ci != "0") || getenv("PROBELET_E2E") == "1"
}

// decide applies the policy to a missing root privilege: skip on a
// developer's machine, fail where the tests must run.
func decide(root bool, getenv func(string) string) verdict {
	switch {
	case root:
		return verdictRun
	case mustRun(getenv):
		return verdictFail
	default:
		return verdictSkip
	}
}
