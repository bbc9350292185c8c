package files

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tollgate-gw/tollgate/core/files/localblob"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob"
)

// The drivers compiled in besides file:// (openLocal). A local directory (the default, or a file://
// URL) is localblob's, one file per blob, with fileblob beside it for the
// files earlier versions wrote there (content and <id>.attrs sidecar).
// memblob costs nothing; s3blob adds about 12 MB to the binary and covers
// AWS S3 and every S3-compatible service (MinIO, R2, GCS through its XML
// API). gcsblob and azureblob are left out: each pulls its cloud's whole
// SDK (gcsblob alone would double the binary). docs/decisions.md records
// the choices.
func openers() map[string]blob.BucketURLOpener {
	return map[string]blob.BucketURLOpener{
		memblob.Scheme: openerFunc(func(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
			return (&memblob.URLOpener{}).OpenBucketURL(ctx, u)
		}),
		s3blob.Scheme: openerFunc(func(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
			// A fresh opener per call: s3blob's opener writes its options
			// while it parses a URL.
			return (&s3blob.URLOpener{}).OpenBucketURL(ctx, u)
		}),
	}
}

type openerFunc func(context.Context, *url.URL) (*blob.Bucket, error)

func (f openerFunc) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	return f(ctx, u)
}

// buckets are where a store's files live: bucket takes every new file;
// earlier, when not nil, holds the files of the earlier local layout
// (fileblob's, in the same directory), read, deleted and swept as before.
type buckets struct {
	bucket, earlier *blob.Bucket
}

func (b buckets) close() error {
	err := b.bucket.Close()
	if b.earlier != nil {
		err = errors.Join(err, b.earlier.Close())
	}
	return err
}

// The directory's defaults: created when missing, private; temporary
// files beside the final ones, since the data dir may be on another mount
// than os.TempDir and a rename cannot cross mounts.
var (
	localOptions = localblob.Options{CreateDir: true, DirFileMode: 0o700}
	fileOptions  = fileblob.Options{CreateDir: true, DirFileMode: 0o700, NoTempDir: true}
)

// openBucket opens rawURL, or the directory dir when rawURL is empty. An
// explicit mux of our own (not gocloud's global one) keeps the set of
// schemes the one listed above.
func openBucket(ctx context.Context, rawURL, dir string) (buckets, error) {
	ops := openers()
	if rawURL == "" {
		if dir == "" {
			return buckets{}, errors.New("files: no storage URL and no directory")
		}
		bs, err := openLocal(ctx, &url.URL{Scheme: fileblob.Scheme, Path: filepath.ToSlash(dir)})
		if err != nil {
			return buckets{}, fmt.Errorf("files: directory %s: %w", dir, err)
		}
		return bs, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return buckets{}, fmt.Errorf("files: storage URL: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == fileblob.Scheme {
		bs, err := openLocal(ctx, u)
		if err != nil {
			return buckets{}, fmt.Errorf("files: storage URL %s: %w", redactURL(rawURL), err)
		}
		return bs, nil
	}
	if _, ok := ops[scheme]; !ok {
		names := []string{fileblob.Scheme + "://"}
		for k := range ops {
			names = append(names, k+"://")
		}
		sort.Strings(names)
		if scheme == "" {
			return buckets{}, fmt.Errorf("files: storage URL %q has no scheme (supported: %s)", redactURL(rawURL), strings.Join(names, ", "))
		}
		return buckets{}, fmt.Errorf("files: storage URL scheme %q is not supported (supported: %s)", scheme, strings.Join(names, ", "))
	}
	mux := new(blob.URLMux)
	for k, o := range ops {
		mux.RegisterBucket(k, o)
	}
	b, err := mux.OpenBucketURL(ctx, u)
	if err != nil {
		return buckets{}, fmt.Errorf("files: storage URL %s: %w", redactURL(rawURL), err)
	}
	return buckets{bucket: b}, nil
}

// openLocal opens a file:// URL: localblob and fileblob on its directory,
// each under the URL's prefix= folder as gocloud's mux would.
func openLocal(ctx context.Context, u *url.URL) (buckets, error) {
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	bare := *u
	bare.RawQuery = q.Encode()
	b, err := (&localblob.URLOpener{Options: localOptions}).OpenBucketURL(ctx, &bare)
	if err != nil {
		return buckets{}, err
	}
	earlier, err := (&fileblob.URLOpener{Options: fileOptions}).OpenBucketURL(ctx, &bare)
	if err != nil {
		_ = b.Close()
		return buckets{}, err
	}
	if prefix != "" {
		b, earlier = blob.PrefixedBucket(b, prefix), blob.PrefixedBucket(earlier, prefix)
	}
	return buckets{b, earlier}, nil
}

// localDir is the directory a file:// URL or dir names (with the URL's
// prefix= folder), or "" for any other bucket.
func localDir(rawURL, dir string) string {
	if rawURL == "" {
		return dir
	}
	u, err := url.Parse(rawURL)
	if err != nil || !strings.EqualFold(u.Scheme, fileblob.Scheme) || u.Path == "" {
		return ""
	}
	prefix := u.Query().Get("prefix")
	if prefix == "" {
		return filepath.FromSlash(u.Path)
	}
	clean := path.Clean("/" + prefix)
	if clean == "/" || !strings.HasSuffix(prefix, "/") || clean[1:]+"/" != prefix {
		return "" // an unusual prefix: the sweep lists through gocloud
	}
	return filepath.Join(filepath.FromSlash(u.Path), filepath.FromSlash(clean[1:]))
}

// redactURL drops user info from a URL before it reaches a log or an error.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
