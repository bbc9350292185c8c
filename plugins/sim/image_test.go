package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"image/png"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

const imageBody = `{"model":"m","input":[{"role":"user","content":"Draw a picture of a toll booth"}],"tools":[{"type":"image_generation"}]}`

func decodePNG(t *testing.T, b64 string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("result is not a PNG: %v", err)
	}
}

func TestImageGenerationCall(t *testing.T) {
	e := NewEngine()
	call := &Call{Protocol: string(protocol.OpenAIResponses), Model: "m", Body: []byte(imageBody)}
	resp, err := e.Chat(context.Background(), call)
	if err != nil || resp.Status != 200 {
		t.Fatalf("%v %+v", err, resp)
	}
	item := gjson.GetBytes(resp.Body, "output.0")
	if item.Get("type").Str != "image_generation_call" || item.Get("status").Str != "completed" {
		t.Fatalf("item %s", item.Raw)
	}
	decodePNG(t, item.Get("result").Str)

	t.Run("streaming", func(t *testing.T) {
		var rec recorder
		call.Body = []byte(strings.Replace(imageBody, `"model":"m",`, `"model":"m","stream":true,`, 1))
		if err := e.Stream(context.Background(), call, &rec); err != nil {
			t.Fatal(err)
		}
		var types []string
		var done gjson.Result
		for _, ev := range rec.events {
			typ := gjson.GetBytes(ev.Data, "type").Str
			types = append(types, typ)
			if typ == "response.output_item.done" {
				done = gjson.GetBytes(ev.Data, "item")
			}
		}
		if !strings.Contains(strings.Join(types, ","), "response.image_generation_call.completed") || types[len(types)-1] != "response.completed" {
			t.Fatalf("events %v", types)
		}
		decodePNG(t, done.Get("result").Str)
	})
	t.Run("no picture asked, no image", func(t *testing.T) {
		call.Body = []byte(strings.Replace(imageBody, "Draw a picture of a toll booth", "Say hello", 1))
		resp, _ := e.Chat(context.Background(), call)
		if typ := gjson.GetBytes(resp.Body, "output.0.type").Str; typ != "message" {
			t.Fatalf("type %s", typ)
		}
	})
}

type recorder struct {
	head   vendor.Head
	events []vendor.Event
}

func (r *recorder) Head(h vendor.Head) error { r.head = h; return nil }
func (r *recorder) Event(e vendor.Event) error {
	r.events = append(r.events, vendor.Event{Name: e.Name, Data: append([]byte(nil), e.Data...)})
	return nil
}
