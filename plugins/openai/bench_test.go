package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// discard is a sink that keeps nothing.
type discard struct{ events int }

func (d *discard) Head(vendor.Head) error   { return nil }
func (d *discard) Event(vendor.Event) error { d.events++; return nil }

func benchVendor(b *testing.B, h http.HandlerFunc) vendor.Vendor {
	up := httptest.NewServer(h)
	b.Cleanup(up.Close)
	v := openai.New()
	b.Cleanup(v.CloseIdleConnections)
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL, APIKey: "sk-bench"}}}); err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkOpenAIChatUnary(b *testing.B) {
	answer := []byte(chatAnswer)
	v := benchVendor(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		_, _ = w.Write(answer)
	})
	req := &vendor.ChatRequest{Channel: "main", Protocol: "openai_chat", Model: "gpt-4o-mini", Body: []byte(chatBody)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := v.Chat(ctx, req)
		if err != nil || resp.Status != 200 {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAIChatStream20(b *testing.B) {
	var sb strings.Builder
	for i := range 20 {
		fmt.Fprintf(&sb, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i)
	}
	sb.WriteString("data: [DONE]\n\n")
	stream := []byte(sb.String())
	v := benchVendor(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(stream)
	})
	req := &vendor.ChatRequest{Channel: "main", Protocol: "openai_chat", Model: "gpt-4o-mini",
		Body: []byte(chatBody), Stream: true, IdleTimeout: 120e9, Timeout: 180e9}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var d discard
		if err := v.ChatStream(ctx, req, &d); err != nil || d.events != 21 {
			b.Fatal(err, d.events)
		}
	}
}
