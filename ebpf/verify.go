package ebpf

import (
	"context"

	"go.uber.org/zap"

	"github.com/probelet/probelet/prober/probe"
)

// compare dials after the short-circuit answered (res, out), counts and
// logs a disagreement, and returns the dial's answer: in verify mode the
// dial is the reference.
func (p *TCPProber) compare(ctx context.Context, target probe.TCPTarget, res probe.Result, out string) (probe.Result, string, probe.Method, error) {
	dres, dout, method, err := p.dial(ctx, target)
	if err != nil {
		return dres, dout, method, err
	}
	if (dres != res || dout != out) && !p.changedMeanwhile(ctx, target, res, out) {
		p.metrics.mismatch.Inc()
		p.log.Warn("TCP short-circuit disagrees with a dial",
			zap.String("host", target.Host), zap.Int("port", target.Port),
			zap.String("netns", target.NetNSPath),
			zap.String("ebpfResult", string(res)), zap.String("ebpfOutput", out),
			zap.String("dialResult", string(dres)), zap.String("dialOutput", dout))
	}
	return dres, dout, method, nil
}

// changedMeanwhile asks the table again once it has caught up with the
// dial: an app that began or stopped listening between the two looks (a
// first probe just after the container started) changes the table's
// answer too, and that is not a disagreement.
func (p *TCPProber) changedMeanwhile(ctx context.Context, target probe.TCPTarget, res probe.Result, out string) bool {
	if p.sc.sync(ctx) != nil {
		return false
	}
	again, againOut, _, ok := p.sc.answer(target)
	return !ok || again != res || againOut != out
}
