// Package keys makes, recognises and seals API keys. The key's text format
// and the alternate header name live here and nowhere else.
package keys

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	// Prefix starts every key: 12 characters, then 64 lower-case hex.
	Prefix = "sk-tollgate-"
	// Length is the total length of a key.
	Length = len(Prefix) + 64
	// AltHeader is the product's alternate key header (the spec's x-gen-api-key).
	AltHeader = "x-tollgate-api-key"
	// DisplayLen is how many leading characters are shown as key_prefix.
	DisplayLen = len(Prefix) + 4
)

// Generate returns a fresh random key.
func Generate() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return Prefix + hex.EncodeToString(b[:]), nil
}

// WellFormed reports whether s has the key format exactly.
func WellFormed(s string) bool {
	if len(s) != Length || !strings.HasPrefix(s, Prefix) {
		return false
	}
	for i := len(Prefix); i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Hash is the lookup index of a raw key.
func Hash(raw string) []byte {
	var h [sha256.Size]byte
	return HashInto(&h, raw)
}

// HashInto is Hash written into dst, which the result slices: a caller
// that owns dst hashes a key without an allocation.
func HashInto(dst *[sha256.Size]byte, raw string) []byte {
	var buf [Length]byte // a well-formed key is copied here, not to the heap
	if len(raw) <= len(buf) {
		*dst = sha256.Sum256(buf[:copy(buf[:], raw)])
	} else {
		*dst = sha256.Sum256([]byte(raw))
	}
	return dst[:]
}

// Display returns the leading characters shown for a key.
func Display(raw string) string {
	if len(raw) < DisplayLen {
		return raw
	}
	return raw[:DisplayLen]
}

// Sealer encrypts raw keys with AES-256-GCM so they can be revealed again.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer takes a 32-byte master key.
func NewSealer(master []byte) (*Sealer, error) {
	if len(master) != 32 {
		return nil, fmt.Errorf("master key must be 32 bytes (64 hex characters), got %d bytes", len(master))
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts raw; the key's hash is bound as additional data so a sealed
// value cannot be moved to another key record.
func (s *Sealer) Seal(raw string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(raw)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(raw), Hash(raw)), nil
}

// ErrNotRevealable is returned for hash-only keys.
var ErrNotRevealable = errors.New("this key was stored hash-only and cannot be revealed")

// Open decrypts a sealed key and checks it against its hash.
func (s *Sealer) Open(sealed, hash []byte) (string, error) {
	if len(sealed) == 0 {
		return "", ErrNotRevealable
	}
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("sealed key is corrupt")
	}
	raw, err := s.aead.Open(nil, sealed[:n], sealed[n:], hash)
	if err != nil {
		return "", errors.New("sealed key does not open with this master key")
	}
	return string(raw), nil
}

// LoadMaster returns the master key: from hexKey when given, else from
// file (<dir>/master.key when file is empty), generating that file (0600)
// on first start.
func LoadMaster(hexKey, dir, file string) ([]byte, error) {
	if hexKey != "" {
		b, err := hex.DecodeString(strings.TrimSpace(hexKey))
		if err != nil || len(b) != 32 {
			return nil, errors.New("server.master_key must be 64 hex characters")
		}
		return b, nil
	}
	path := file
	if path == "" {
		path = filepath.Join(dir, "master.key")
	} else {
		dir = filepath.Dir(path)
	}
	data, err := os.ReadFile(path)
	if err == nil {
		b, err := hex.DecodeString(strings.TrimSpace(string(data)))
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%s: not 64 hex characters", path)
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(b[:])+"\n"), 0o600); err != nil {
		return nil, err
	}
	return b[:], nil
}
