package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Defaults of Options.
const (
	DefaultSweepEvery = 10 * time.Minute
	DefaultMaxSize    = 512 << 20
)

// Errors of the store. Compare with errors.Is.
var (
	// ErrNotFound: no such file (deleted, or an id that was never issued).
	ErrNotFound = errors.New("files: file not found")
	// ErrExpired: the file is past its retention (swept or about to be).
	ErrExpired = errors.New("files: file expired")
	// ErrTooLarge: Put read more than Options.MaxSize bytes; nothing is kept.
	ErrTooLarge = errors.New("files: file too large")
)

// Options configure a Store.
type Options struct {
	// URL is a gocloud blob URL: file:///path, s3://bucket?region=...,
	// mem:// (tests). Any URL takes the prefix=dir/ parameter to keep the
	// files under a folder of a shared bucket. Empty means Dir.
	URL string
	// Dir is the directory used when URL is empty, normally
	// <data dir>/files; it is created if missing.
	Dir string
	// Secret keys the link signatures (required, at least 16 bytes). The
	// gateway derives it from its master key, so links survive a restart and
	// all die together when the key changes.
	Secret []byte
	// Now is the clock (tests inject one); nil means time.Now.
	Now func() time.Time
	// Logger receives the sweep's reports; nil discards them.
	Logger hclog.Logger
	// SweepEvery is how often Run sweeps; 0 means DefaultSweepEvery.
	SweepEvery time.Duration
	// MaxSize caps one file in bytes; 0 means DefaultMaxSize.
	MaxSize int64
}

// Store is the hosted-files store. It is safe for concurrent use.
type Store struct {
	buckets    // bucket takes new files; earlier (local directories only) the earlier layout's
	key        []byte
	now        func() time.Time
	log        hclog.Logger
	sweepEvery time.Duration
	maxSize    int64
	sweepPage  int
	// dir is the bucket's directory when it is one (fileblob), which the
	// sweep reads itself: see sweepDir.
	dir string
}

// File is what Put stores.
type File struct {
	// Data is the content; when nil, Reader is read to its end instead.
	Data   []byte
	Reader io.Reader
	// ContentType of the content; empty means sniffed from its first bytes.
	ContentType string
	// Name is a suggested download name ("image-1.png"), may be empty.
	Name string
	// Owner is the account id the file belongs to.
	Owner string
	// Retention is how long the file is kept; 0 keeps it until deleted.
	Retention time.Duration
}

// Info describes a stored file.
type Info struct {
	ID          string
	ContentType string
	Name        string
	Owner       string
	Size        int64
	// CreatedAt is when the blob was written (its modification time).
	CreatedAt time.Time
	// ExpiresAt is when the file is swept; zero means never.
	ExpiresAt time.Time
}

// Metadata keys on each blob (gocloud lowercases keys).
const (
	metaOwner = "owner"
	metaName  = "name"
)

// Open opens the store named by o and checks that its bucket is reachable.
func Open(ctx context.Context, o Options) (*Store, error) {
	if len(o.Secret) < minSecret {
		return nil, fmt.Errorf("files: the signing secret must be at least %d bytes", minSecret)
	}
	if o.SweepEvery < 0 || o.MaxSize < 0 {
		return nil, errors.New("files: SweepEvery and MaxSize must not be negative")
	}
	bs, err := openBucket(ctx, o.URL, o.Dir)
	if err != nil {
		return nil, err
	}
	ok, err := bs.bucket.IsAccessible(ctx)
	if err == nil && !ok {
		err = errors.New("bucket does not exist")
	}
	if err != nil {
		_ = bs.close()
		return nil, fmt.Errorf("files: %s: %w", where(o), err)
	}
	s := &Store{
		buckets:    bs,
		key:        signingKey(o.Secret),
		now:        o.Now,
		log:        o.Logger,
		sweepEvery: o.SweepEvery,
		maxSize:    o.MaxSize,
		sweepPage:  sweepPage,
		dir:        localDir(o.URL, o.Dir),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	if s.sweepEvery == 0 {
		s.sweepEvery = DefaultSweepEvery
	}
	if s.maxSize == 0 {
		s.maxSize = DefaultMaxSize
	}
	return s, nil
}

func where(o Options) string {
	if o.URL != "" {
		return redactURL(o.URL)
	}
	return o.Dir
}

// Close releases the bucket. Stop Run (cancel its context) first.
func (s *Store) Close() error { return s.buckets.close() }

// Put stores f and returns its id and expiry. The content streams to the
// bucket; a failed or oversized Put leaves nothing behind.
func (s *Store) Put(ctx context.Context, f File) (Info, error) {
	if f.Retention < 0 {
		return Info{}, errors.New("files: negative retention")
	}
	var r io.Reader
	switch {
	case f.Data != nil && f.Reader != nil:
		return Info{}, errors.New("files: set Data or Reader, not both")
	case f.Data != nil:
		r = bytes.NewReader(f.Data)
	case f.Reader != nil:
		r = f.Reader
	default:
		r = bytes.NewReader(nil)
	}
	ct := f.ContentType
	if ct == "" {
		// Sniff here rather than let gocloud do it, so that Info tells
		// what was stored without reading the attributes back.
		br := bufio.NewReaderSize(r, 512)
		head, _ := br.Peek(512)
		ct = http.DetectContentType(head)
		r = br
	}
	now := s.now()
	var exp time.Time
	if f.Retention > 0 {
		// Whole seconds, rounded up: a file is never swept early.
		exp = now.Add(f.Retention + time.Second - 1).Truncate(time.Second)
		if exp.Unix() > maxExpiry {
			return Info{}, errors.New("files: retention too long")
		}
	}
	id, err := newID(exp)
	if err != nil {
		return Info{}, err
	}
	name := cleanName(f.Name)
	md := map[string]string{}
	if f.Owner != "" {
		md[metaOwner] = f.Owner
	}
	if name != "" {
		md[metaName] = name
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.bucket.NewWriter(wctx, id, &blob.WriterOptions{ContentType: ct, Metadata: md})
	if err != nil {
		return Info{}, fmt.Errorf("files: put: %w", err)
	}
	buf := copyBufs.Get().(*[]byte)
	n, err := io.CopyBuffer(writerOnly{w}, io.LimitReader(r, s.maxSize+1), *buf)
	copyBufs.Put(buf)
	if err == nil && n > s.maxSize {
		err = ErrTooLarge
	}
	if err != nil {
		// Cancelling before Close aborts the write (gocloud's contract).
		cancel()
		_ = w.Close()
		if errors.Is(err, ErrTooLarge) {
			return Info{}, err
		}
		return Info{}, fmt.Errorf("files: put: %w", err)
	}
	if err := w.Close(); err != nil {
		return Info{}, fmt.Errorf("files: put: %w", err)
	}
	return Info{
		ID: id, ContentType: ct, Name: name, Owner: f.Owner, Size: n,
		CreatedAt: now, ExpiresAt: exp,
	}, nil
}

// Stat returns a file's description: ErrNotFound for an unknown or
// malformed id, ErrExpired for a file past its retention.
func (s *Store) Stat(ctx context.Context, id string) (Info, error) {
	_, info, err := s.find(ctx, id)
	return info, err
}

// find checks id and reads its attributes from the bucket that holds it.
func (s *Store) find(ctx context.Context, id string) (*blob.Bucket, Info, error) {
	exp, ok := parseID(id)
	if !ok {
		return nil, Info{}, ErrNotFound
	}
	if expired(exp, s.now()) {
		return nil, Info{}, ErrExpired
	}
	b := s.bucket
	a, err := b.Attributes(ctx, id)
	if gcerrors.Code(err) == gcerrors.NotFound && s.earlier != nil {
		b = s.earlier
		a, err = b.Attributes(ctx, id)
	}
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, Info{}, ErrNotFound
		}
		return nil, Info{}, fmt.Errorf("files: stat: %w", err)
	}
	return b, Info{
		ID:          id,
		ContentType: a.ContentType,
		Name:        a.Metadata[metaName],
		Owner:       a.Metadata[metaOwner],
		Size:        a.Size,
		CreatedAt:   a.ModTime,
		ExpiresAt:   exp,
	}, nil
}

// Open returns a file's content (seekable) and description; the caller
// closes the reader. Errors as Stat.
func (s *Store) Open(ctx context.Context, id string) (io.ReadSeekCloser, Info, error) {
	b, info, err := s.find(ctx, id)
	if err != nil {
		return nil, Info{}, err
	}
	r, err := b.NewReader(ctx, id, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			// Deleted between the two reads.
			return nil, Info{}, ErrNotFound
		}
		return nil, Info{}, fmt.Errorf("files: open: %w", err)
	}
	return r, info, nil
}

// Delete removes a file now; deleting a missing file is not an error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if _, ok := parseID(id); !ok {
		return ErrNotFound
	}
	err := s.bucket.Delete(ctx, id)
	if gcerrors.Code(err) == gcerrors.NotFound && s.earlier != nil {
		err = s.earlier.Delete(ctx, id)
	}
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("files: delete: %w", err)
	}
	return nil
}

// copyBufs holds Put's copy buffers: blob.Writer's own ReadFrom allocates
// 1 MB per call.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// writerOnly hides blob.Writer's ReadFrom so that io.CopyBuffer uses ours.
type writerOnly struct{ io.Writer }

// cleanName keeps a suggested file name safe to store and to put in a
// Content-Disposition header: the last path element, no control
// characters, valid UTF-8, at most 200 bytes.
func cleanName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base(strings.TrimSpace(name))
	if name == "." || name == "/" || name == ".." {
		return ""
	}
	name = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	for len(name) > 200 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}
