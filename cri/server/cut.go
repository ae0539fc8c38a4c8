package server

import (
	"fmt"
	"unicode/utf8"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// cutOutputs cuts every output in why to limit bytes (0: no limit), on a
// UTF-8 boundary, saying how long it was: the probe-state API carries a
// namespace's probes in one answer, and a probe's output is the node's
// (up to the kubelet's 10 KiB per run) until it is cut here.
func cutOutputs(why *apiv1.WhyResponse, limit int) {
	if limit <= 0 {
		return
	}
	cut := func(runs []*apiv1.ProbeRun) {
		for _, r := range runs {
			r.Output = cutOutput(r.Output, limit)
		}
	}
	for _, p := range why.GetContainer().GetProbes() {
		p.LastOutput = cutOutput(p.LastOutput, limit)
		cut(p.History)
	}
	for _, x := range why.GetExplanations() {
		cut(x.LastRuns)
	}
}

// cutOutput is s, or its first limit bytes and how many there were.
func cutOutput(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("... (%d bytes, cut)", len(s))
}
