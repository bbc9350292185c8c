package sim

import "encoding/binary"

// The bytes the sim answers for audio and video: small, deterministic and
// shaped like their formats (a WAV file plays as silence; an MP4 or an MP3
// starts with its format's marker), enough for a client to recognise.

// fill appends n bytes of a pseudo-random stream seeded by seed.
func fill(b []byte, n int, seed uint64) []byte {
	x := seed | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, byte(x))
	}
	return b
}

// VideoMP4 is a minimal MP4 (an ftyp box, then an mdat box) of a video of
// seconds, seeded.
func VideoMP4(seconds int64, seed uint64) []byte {
	payload := 512 + int(min(seconds, 3600))*64
	b := make([]byte, 0, 32+payload)
	b = binary.BigEndian.AppendUint32(b, 24)
	b = append(b, "ftypisom"...)
	b = binary.BigEndian.AppendUint32(b, 0x200)
	b = append(b, "isomiso2mp41"...)
	b = binary.BigEndian.AppendUint32(b, uint32(8+payload))
	b = append(b, "mdat"...)
	return fill(b, payload, seed)
}

// AudioMP3 is an MP3-shaped file (an ID3 tag, then frames) seeded.
func AudioMP3(n int, seed uint64) []byte {
	b := make([]byte, 0, 10+n)
	b = append(b, 'I', 'D', '3', 4, 0, 0, 0, 0, 0, 0)
	for i := 0; i < n; i += 417 {
		b = append(b, 0xff, 0xfb, 0x90, 0x64)
		b = fill(b, min(413, n-i), seed+uint64(i))
	}
	return b
}

// AudioWAV is a WAV file of silence, 8 kHz 16-bit mono, ms long.
func AudioWAV(ms int) []byte {
	data := ms * 16 // 8000 samples a second, 2 bytes each
	b := make([]byte, 0, 44+data)
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(36+data))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1) // PCM
	b = binary.LittleEndian.AppendUint16(b, 1) // mono
	b = binary.LittleEndian.AppendUint32(b, 8000)
	b = binary.LittleEndian.AppendUint32(b, 16000)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(data))
	return append(b, make([]byte, data)...)
}
