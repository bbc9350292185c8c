package localblob

import (
	"errors"
	"path/filepath"
	"strings"
)

// Suffix ends the name of every blob file. A file without it (fileblob's
// content file or sidecar, a temporary file, anything else in the
// directory) is not a blob of this driver, and a reader that looks a key
// up by its bare name (fileblob, an earlier gateway) does not find it.
const Suffix = ".blob"

var errEmptyKey = errors.New("localblob: empty key")

// relPath maps a key to its file's path under the bucket's directory: each
// "/" of the key separates directories, as in fileblob, except where the
// piece before it would be "", "." or ".." (or it ends the key), where it is
// escaped instead; bytes below 0x20, 0x7f, "%" and "\" are escaped as %XX.
// A directory's name never ends in Suffix (its dot is escaped), so a
// directory and a blob file never share a name.
func relPath(key string) (string, error) {
	if key == "" {
		return "", errEmptyKey
	}
	var b strings.Builder
	b.Grow(len(key) + len(Suffix))
	start := 0 // where the current directory or file name starts in b
	raw := 0   // where the current piece starts in key
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '/' {
			piece := key[raw:i]
			if i == len(key)-1 || piece == "" || piece == "." || piece == ".." {
				b.WriteString("%2F")
				continue
			}
			endDir(&b, start)
			b.WriteByte(filepath.Separator)
			start, raw = b.Len(), i+1
			continue
		}
		if c < 0x20 || c == 0x7f || c == '%' || c == '\\' {
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	b.WriteString(Suffix)
	return b.String(), nil
}

// endDir escapes the dot of a directory name (b from start) that would end
// in Suffix.
func endDir(b *strings.Builder, start int) {
	s := b.String()
	if name := s[start:]; strings.HasSuffix(name, Suffix) {
		b.Reset()
		b.WriteString(s[:len(s)-len(Suffix)])
		b.WriteString("%2E")
		b.WriteString(Suffix[1:])
	}
}

// KeyOf returns the key of a blob file from its path relative to the
// bucket's directory (a bare file name for a blob at the top), and false
// for a file that is not a blob of this driver.
func KeyOf(rel string) (string, bool) {
	if !strings.HasSuffix(rel, Suffix) || len(rel) == len(Suffix) {
		return "", false
	}
	return unescape(filepath.ToSlash(rel[:len(rel)-len(Suffix)])), true
}

// unescape reverses the %XX escapes of relPath; anything else is kept.
func unescape(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
