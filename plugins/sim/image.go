package sim

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// simImage is the PNG an image_generation call returns, base64-encoded:
// a small deterministic gradient, made once.
var simImage = sync.OnceValue(func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for y := 0; y < 16; y++ {
		for x := 0; x < 16; x++ {
			img.Set(x, y, color.RGBA{R: uint8(x * 16), G: uint8(y * 16), B: 160, A: 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
})

// wantsImage reports whether a responses-style call offers the built-in
// image_generation tool and its user asks for a picture.
func wantsImage(p protocol.ID, c *conv) bool {
	if p != protocol.OpenAIResponses || !c.tools.IsArray() || !c.lastIsUser {
		return false
	}
	offered := false
	c.tools.ForEach(func(_, t gjson.Result) bool {
		offered = t.Get("type").Str == "image_generation"
		return !offered
	})
	if !offered {
		return false
	}
	for _, w := range [...]string{"image", "picture", "draw", "drawing", "illustration"} {
		if containsFold(c.userText, w) {
			return true
		}
	}
	return false
}

// appendImageItem appends an image_generation_call output item; its result
// (the base64 PNG) only when done.
func appendImageItem(b []byte, pl *plan, done bool) []byte {
	b = append(b, `{"id":"ig_`...)
	b = pl.appendID(b, 5)
	b = append(b, `","type":"image_generation_call","status":"`...)
	if done {
		b = append(b, `completed","result":"`...)
		b = append(b, simImage()...)
		return append(b, `"}`...)
	}
	return append(b, `in_progress","result":null}`...)
}
