package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"image/png"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// Responses-style image_generation is not forced to streaming: a
// non-streaming call returns an image_generation_call item whose result is
// a base64 PNG (the spec's responses endpoint rules).
func TestResponsesImageGenerationNonStreaming(t *testing.T) {
	g, acct, key := startDefault(t)
	client := openaiClient(g, key)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "sim-chat",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Draw a picture of a toll booth")},
		Tools: []responses.ToolUnionParam{{OfImageGeneration: &responses.ToolImageGenerationParam{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 1 || resp.Output[0].Type != "image_generation_call" {
		t.Fatalf("output %+v", resp.Output)
	}
	raw, err := base64.StdEncoding.DecodeString(resp.Output[0].Result)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("result is not a PNG: %v", err)
	}
	w := wallet{g: g, acct: acct, key: key}
	if row := w.last(t, 1); row["status"] != "success" || checkCost(t, row) == 0 {
		t.Fatalf("row %v", row)
	}
	w.settled(t, 1)
}
