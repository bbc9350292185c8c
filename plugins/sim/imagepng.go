package sim

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// ImagePNG is the sim's picture: a w x h PNG of horizontal stripes in two
// colours chosen by seed. It has one bit per pixel, so a 1024x1024 image
// is about a kilobyte, yet it decodes at the size the answer reports.
func ImagePNG(w, h int, seed uint64) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 1, 3 // bit depth 1, palette
	pngChunk(&b, "IHDR", ihdr[:])
	pngChunk(&b, "PLTE", []byte{
		byte(seed), byte(seed >> 8), byte(seed >> 16),
		byte(seed>>24) | 0x80, byte(seed>>32) | 0x80, byte(seed>>40) | 0x80,
	})
	stride := 1 + (w+7)/8
	dark, light := make([]byte, stride), make([]byte, stride) // filter byte 0, then pixels
	for i := 1; i < stride; i++ {
		light[i] = 0xff
	}
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestSpeed) // a valid level never fails
	for y := 0; y < h; y++ {
		if y/32%2 == 0 {
			_, _ = zw.Write(dark)
		} else {
			_, _ = zw.Write(light)
		}
	}
	_ = zw.Close()
	pngChunk(&b, "IDAT", idat.Bytes())
	pngChunk(&b, "IEND", nil)
	return b.Bytes()
}

func pngChunk(b *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	b.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	b.WriteString(typ)
	b.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	b.Write(n[:])
}
