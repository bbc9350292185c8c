package vendor

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ConfigError is a plugin's refusal of its configuration, in plain words,
// naming the channel and the attribute it concerns so the gateway can
// point at the operator's file (`tollgate.hcl:34,15-40: channel "x":
// api_key is empty`). Configure returns it; any other Configure error is
// taken as a refusal of the plugin as a whole.
type ConfigError struct {
	Channel string // "" for the plugin's own settings
	Field   string // "base_url", "api_key", "protocols", "settings", ...; "" for the whole block
	Message string // what is wrong and, where it helps, the fix
}

func (e *ConfigError) Error() string {
	if e.Channel == "" {
		return e.Message
	}
	return fmt.Sprintf("channel %q: %s", e.Channel, e.Message)
}

// ChannelError returns a ConfigError for one channel's field.
func ChannelError(channel, field, format string, args ...any) *ConfigError {
	return &ConfigError{Channel: channel, Field: field, Message: fmt.Sprintf(format, args...)}
}

// The ErrorInfo that carries a ConfigError across gRPC.
const (
	errorDomain = "tollgate.vendor"
	errorReason = "CONFIG"
)

// configStatus is a Configure error as the gRPC server returns it: a
// ConfigError travels whole, anything else as its message alone.
func configStatus(err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	st, derr := status.New(codes.InvalidArgument, ce.Message).WithDetails(&errdetails.ErrorInfo{
		Reason: errorReason, Domain: errorDomain,
		Metadata: map[string]string{"channel": ce.Channel, "field": ce.Field},
	})
	if derr != nil {
		return status.Error(codes.InvalidArgument, ce.Error())
	}
	return st.Err()
}

// fromConfigStatus turns the server's refusal back into a *ConfigError, so
// no gRPC wording reaches the operator. Transport faults stay as they are.
func fromConfigStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return err
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain && info.GetReason() == errorReason {
			return &ConfigError{Channel: info.GetMetadata()["channel"], Field: info.GetMetadata()["field"], Message: st.Message()}
		}
	}
	return &ConfigError{Message: st.Message()}
}
