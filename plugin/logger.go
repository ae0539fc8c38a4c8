package plugin

import (
	"context"

	nrilog "github.com/containerd/nri/pkg/log"
	"go.uber.org/zap"
)

// nriLogger routes the NRI stub's messages to zap. The stub narrates every
// registration attempt at info level, so info becomes debug here; probelet
// logs connection changes itself. It reads the plugin's logger at each
// message, so SetLogger reaches a stub made before it.
type nriLogger struct{ p *Plugin }

var _ nrilog.Logger = nriLogger{}

func (l nriLogger) s() *zap.SugaredLogger { return l.p.logger().Sugar() }

func (l nriLogger) Debugf(_ context.Context, format string, args ...any) {
	l.s().Debugf(format, args...)
}
func (l nriLogger) Infof(_ context.Context, format string, args ...any) {
	l.s().Debugf(format, args...)
}
func (l nriLogger) Warnf(_ context.Context, format string, args ...any) { l.s().Warnf(format, args...) }
func (l nriLogger) Errorf(_ context.Context, format string, args ...any) {
	l.s().Errorf(format, args...)
}
