package images

import (
	"bytes"
	"encoding/binary"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strconv"
)

// sniffSize reads an image's WxH from its header (PNG, JPEG, GIF, WebP);
// "" when it cannot.
func sniffSize(b []byte) string {
	w, h := 0, 0
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		if c, err := png.DecodeConfig(bytes.NewReader(b)); err == nil {
			w, h = c.Width, c.Height
		}
	case bytes.HasPrefix(b, []byte("\xff\xd8")):
		if c, err := jpeg.DecodeConfig(bytes.NewReader(b)); err == nil {
			w, h = c.Width, c.Height
		}
	case bytes.HasPrefix(b, []byte("GIF8")):
		if c, err := gif.DecodeConfig(bytes.NewReader(b)); err == nil {
			w, h = c.Width, c.Height
		}
	case len(b) >= 30 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")):
		w, h = webpSize(b)
	}
	if w <= 0 || h <= 0 {
		return ""
	}
	return strconv.Itoa(w) + "x" + strconv.Itoa(h)
}

// webpSize reads the canvas of a WebP's first chunk (VP8X, VP8L or VP8).
func webpSize(b []byte) (int, int) {
	switch string(b[12:16]) {
	case "VP8X":
		w := int(b[24]) | int(b[25])<<8 | int(b[26])<<16
		h := int(b[27]) | int(b[28])<<8 | int(b[29])<<16
		return w + 1, h + 1
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1
	case "VP8 ":
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff)
	}
	return 0, 0
}
