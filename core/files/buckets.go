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

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob"
)

// The drivers compiled in. fileblob and memblob cost nothing; s3blob adds
// about 12 MB to the binary and covers AWS S3 and every S3-compatible
// service (MinIO, R2, GCS through its XML API). gcsblob and azureblob are
// left out: each pulls its cloud's whole SDK (gcsblob alone would double the
// binary). docs/decisions.md records the choice.
func openers() map[string]blob.BucketURLOpener {
	return map[string]blob.BucketURLOpener{
		fileblob.Scheme: openerFunc(func(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
			// The directory is created when missing; temporary files sit
			// beside the final ones, since the data dir may be on another
			// mount than os.TempDir and a rename cannot cross mounts.
			o := &fileblob.URLOpener{Options: fileblob.Options{CreateDir: true, DirFileMode: 0o700, NoTempDir: true}}
			return o.OpenBucketURL(ctx, u)
		}),
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

// openBucket opens rawURL, or the directory dir when rawURL is empty. An
// explicit mux of our own (not gocloud's global one) keeps the set of
// schemes the one listed above.
func openBucket(ctx context.Context, rawURL, dir string) (*blob.Bucket, error) {
	ops := openers()
	if rawURL == "" {
		if dir == "" {
			return nil, errors.New("files: no storage URL and no directory")
		}
		b, err := fileblob.OpenBucket(dir, &fileblob.Options{CreateDir: true, DirFileMode: 0o700, NoTempDir: true})
		if err != nil {
			return nil, fmt.Errorf("files: directory %s: %w", dir, err)
		}
		return b, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("files: storage URL: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	if _, ok := ops[scheme]; !ok {
		names := make([]string, 0, len(ops))
		for k := range ops {
			names = append(names, k+"://")
		}
		sort.Strings(names)
		if scheme == "" {
			return nil, fmt.Errorf("files: storage URL %q has no scheme (supported: %s)", redactURL(rawURL), strings.Join(names, ", "))
		}
		return nil, fmt.Errorf("files: storage URL scheme %q is not supported (supported: %s)", scheme, strings.Join(names, ", "))
	}
	mux := new(blob.URLMux)
	for k, o := range ops {
		mux.RegisterBucket(k, o)
	}
	b, err := mux.OpenBucketURL(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("files: storage URL %s: %w", redactURL(rawURL), err)
	}
	return b, nil
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
