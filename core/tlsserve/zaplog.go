package tlsserve

import (
	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger hands certmagic's zap logs to the gateway's one logger.
func zapLogger(log hclog.Logger) *zap.Logger {
	return zap.New(&hclogCore{log: log})
}

// hclogCore is a zapcore.Core writing to hclog: certmagic's info is the
// gateway's debug (it is chatty), its warnings and errors stay so.
type hclogCore struct {
	log    hclog.Logger
	fields []zapcore.Field
}

func (c *hclogCore) Enabled(l zapcore.Level) bool {
	switch {
	case l >= zapcore.ErrorLevel:
		return c.log.IsError()
	case l >= zapcore.WarnLevel:
		return c.log.IsWarn()
	}
	return c.log.IsDebug()
}

func (c *hclogCore) With(fields []zapcore.Field) zapcore.Core {
	return &hclogCore{log: c.log, fields: append(append([]zapcore.Field(nil), c.fields...), fields...)}
}

func (c *hclogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *hclogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	args := make([]any, 0, 2*len(enc.Fields))
	for k, v := range enc.Fields {
		args = append(args, k, v)
	}
	log := c.log
	if e.LoggerName != "" {
		log = log.Named(e.LoggerName)
	}
	switch {
	case e.Level >= zapcore.ErrorLevel:
		log.Error(e.Message, args...)
	case e.Level >= zapcore.WarnLevel:
		log.Warn(e.Message, args...)
	default:
		log.Debug(e.Message, args...)
	}
	return nil
}

func (c *hclogCore) Sync() error { return nil }
