package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// A channel with transport = "in-process" runs the built-in sim vendor in
// the gateway's process: no tollgate-plugin-sim is started, and a whole
// answer and a stream are served, charged and logged to the nano as over
// the plugin process.
func TestInProcessTransport(t *testing.T) {
	cfg := strings.Replace(opsConfig, `vendor    = "sim"`, "vendor    = \"sim\"\n  transport = \"in-process\"", 1)
	g := startGateway(t, testgw.Options{Config: cfg})
	w := newWallet(g)
	client := openaiClient(g, w.key)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "sim-chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello in process")},
	})
	if err != nil {
		t.Fatal(err)
	}
	u := resp.Usage
	if resp.Choices[0].Message.Content == "" || u.CompletionTokens == 0 {
		t.Fatalf("response %+v", resp)
	}
	if spent := w.settled(t, 1); spent != money.Nano(u.PromptTokens*100+u.CompletionTokens*400) {
		t.Fatalf("spent %s", spent)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "sim-chat",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream in process [sim:chunks=20]")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 20 || acc.Usage.CompletionTokens == 0 {
		t.Fatalf("%d chunks, usage %+v", chunks, acc.Usage)
	}
	w.settled(t, 2)

	if pids := pluginPids(t, g, "sim"); len(pids) != 0 {
		t.Fatalf("a sim plugin process runs beside the in-process vendor: %v", pids)
	}
}

// A vendor that is not built into tollgate cannot run in process: the
// gateway refuses to start, at the channel's transport.
func TestInProcessRefusesAThirdPartyVendor(t *testing.T) {
	cfg := `
channel "x" {
  vendor    = "acme"
  protocols = ["openai_chat"]
  models    = ["sim-chat"]
  transport = "in-process"
}
model "sim-chat" {
  price {
    input  = "0.10"
    output = "0.40"
  }
}
`
	out := runExpectFailure(t, testgw.Build(t)+"/tollgate", cfg)
	if !strings.Contains(out, `"acme" is not built into tollgate`) || !strings.Contains(out, "transport") {
		t.Fatalf("output:\n%s", out)
	}
}
