package localblob

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// A blob file is a header, then the content, written once and never
// rewritten:
//
//	magic (15 bytes), version (1 byte), uvarint length of the body, body;
//	body: content type, cache control, content disposition, content
//	encoding, content language (each a uvarint length and its bytes), a
//	uvarint count of metadata pairs, then each key and value the same way.
//
// A reader that meets another version answers an error rather than guess.
const (
	magic   = "\x00tollgate-blob\n"
	version = 1
	// maxHeader bounds the body a reader accepts (a damaged length must not
	// allocate gigabytes) and a writer writes.
	maxHeader = 1 << 20
	// firstRead is how much of a file one read takes: the whole header of
	// every blob the gateway writes.
	firstRead = 512
)

var (
	errDamaged     = errors.New("localblob: not a blob file or a damaged header")
	errHeaderLarge = errors.New("localblob: attributes larger than 1 MB")
)

// attrs are what the header keeps.
type attrs struct {
	ContentType        string
	CacheControl       string
	ContentDisposition string
	ContentEncoding    string
	ContentLanguage    string
	Metadata           map[string]string
}

// appendHeader appends a's header to dst.
func appendHeader(dst []byte, a *attrs) ([]byte, error) {
	fields := [...]string{a.ContentType, a.CacheControl, a.ContentDisposition, a.ContentEncoding, a.ContentLanguage}
	n := binary.MaxVarintLen64
	for _, f := range fields {
		n += binary.MaxVarintLen64 + len(f)
	}
	keys := make([]string, 0, len(a.Metadata))
	for k, v := range a.Metadata {
		keys = append(keys, k)
		n += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	if n > maxHeader {
		return nil, errHeaderLarge
	}
	sort.Strings(keys) // the same attributes, the same bytes
	body := make([]byte, 0, n)
	for _, f := range fields {
		body = appendString(body, f)
	}
	body = binary.AppendUvarint(body, uint64(len(keys)))
	for _, k := range keys {
		body = appendString(body, k)
		body = appendString(body, a.Metadata[k])
	}
	dst = append(dst, magic...)
	dst = append(dst, version)
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	return append(dst, body...), nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readHeader reads f's header: its attributes and where the content starts.
func readHeader(f *os.File) (*attrs, int64, error) {
	var first [firstRead]byte
	n, err := f.ReadAt(first[:], 0)
	if err != nil && err != io.EOF {
		return nil, 0, err
	}
	b := first[:n]
	if len(b) < len(magic)+2 || string(b[:len(magic)]) != magic {
		return nil, 0, errDamaged
	}
	if v := b[len(magic)]; v != version {
		return nil, 0, fmt.Errorf("localblob: header version %d, this gateway reads %d", v, version)
	}
	l, w := binary.Uvarint(b[len(magic)+1:])
	if w <= 0 || l > maxHeader {
		return nil, 0, errDamaged
	}
	start := len(magic) + 1 + w
	end := int64(start) + int64(l)
	var body []byte
	if end <= int64(len(b)) {
		body = b[start:end]
	} else {
		body = make([]byte, l)
		if _, err := f.ReadAt(body, int64(start)); err != nil {
			if err == io.EOF {
				err = errDamaged
			}
			return nil, 0, err
		}
	}
	a, ok := parseBody(body)
	if !ok {
		return nil, 0, errDamaged
	}
	return a, end, nil
}

// parseBody decodes a header's body; false when it is damaged.
func parseBody(b []byte) (*attrs, bool) {
	var a attrs
	for _, f := range [...]*string{&a.ContentType, &a.CacheControl, &a.ContentDisposition, &a.ContentEncoding, &a.ContentLanguage} {
		var ok bool
		if *f, b, ok = takeString(b); !ok {
			return nil, false
		}
	}
	count, w := binary.Uvarint(b)
	if w <= 0 || count > uint64(len(b)) {
		return nil, false
	}
	b = b[w:]
	if count > 0 {
		a.Metadata = make(map[string]string, count)
	}
	for range count {
		k, rest, ok := takeString(b)
		if !ok {
			return nil, false
		}
		v, rest, ok := takeString(rest)
		if !ok {
			return nil, false
		}
		a.Metadata[k], b = v, rest
	}
	return &a, len(b) == 0
}

func takeString(b []byte) (string, []byte, bool) {
	l, w := binary.Uvarint(b)
	if w <= 0 || l > uint64(len(b)-w) {
		return "", nil, false
	}
	return string(b[w : w+int(l)]), b[w+int(l):], true
}
