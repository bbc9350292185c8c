package vendor

import (
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// NewLogger returns the logger a plugin process logs with: JSON on stderr,
// which the host re-logs through its own logger under the plugin's name.
func NewLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name: name, Level: hclog.Trace, Output: os.Stderr, JSONFormat: true,
	})
}

// Serve runs a vendor plugin: call it from the plugin binary's main. It
// prints nothing to stdout but go-plugin's handshake, and exits when the
// host process is gone, even when the host was SIGKILLed.
func Serve(v Vendor) {
	go watchParent(os.Getppid(), 200*time.Millisecond)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &GRPCPlugin{Impl: v}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(MaxMessage), grpc.MaxSendMsgSize(MaxMessage))
			return grpc.NewServer(opts...)
		},
		Logger: NewLogger("plugin"),
	})
}

// watchParent exits the process once its parent changes: a dead host's
// children are re-parented, and nobody would ever stop this plugin.
func watchParent(ppid int, every time.Duration) {
	for range time.Tick(every) {
		if os.Getppid() != ppid {
			os.Exit(0)
		}
	}
}
