// Package localblob is a gocloud.dev/blob driver for a local directory
// that keeps each blob in one file: a small header with the blob's
// attributes (content type, metadata...), then its content. fileblob keeps
// the attributes in a second file (<key>.attrs), and creating a file is most
// of what writing a small blob costs on a disk.
//
// A blob file is named by its key and Suffix; it is written to a temporary
// file beside it (<name>.<hex>.tmp) and renamed into place on Close, so a
// reader never sees half a blob. Keys map to paths as in fileblob: "/"
// separates directories; docs/files.md has the layout.
//
// As exposes, as fileblob does: Bucket: os.FileInfo (of the directory);
// Error: *os.PathError; Attributes and ListObject: os.FileInfo;
// ReaderOptions.BeforeRead and WriterOptions.BeforeWrite (and
// CopyOptions.BeforeCopy): *os.File. SignedURL answers Unimplemented, as
// fileblob does without a URL signer: the gateway signs its own links.
package localblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// Options of a bucket.
type Options struct {
	// CreateDir creates the directory (and its parents) when missing.
	CreateDir bool
	// DirFileMode is the mode of the directories it creates; 0 means 0700.
	DirFileMode os.FileMode
}

type bucket struct {
	dir     string
	dirMode os.FileMode
}

var (
	errExists        = errors.New("localblob: blob exists")
	errUnimplemented = errors.New("localblob: signed URLs are not offered (the gateway signs its own links)")
)

// OpenBucket opens the directory dir as a bucket.
func OpenBucket(dir string, o *Options) (*blob.Bucket, error) {
	drv, err := New(dir, o)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(drv), nil
}

// New returns the driver of the directory dir (for blob.NewBucket).
func New(dir string, o *Options) (driver.Bucket, error) {
	if o == nil {
		o = &Options{}
	}
	mode := o.DirFileMode
	if mode == 0 {
		mode = 0o700
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localblob: %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) && o.CreateDir {
		if err = os.MkdirAll(abs, mode); err == nil {
			fi, err = os.Stat(abs)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("localblob: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("localblob: %s is not a directory", abs)
	}
	return &bucket{dir: abs, dirMode: mode}, nil
}

// URLOpener opens file:// URLs as fileblob reads them (file:///abs/dir,
// file://./rel/dir), with its query parameters create_dir, dir_file_mode
// and no_tmp_dir (temporary files are always beside the final ones, so it
// changes nothing). Others are refused.
type URLOpener struct {
	Options Options
}

// OpenBucketURL implements blob.BucketURLOpener.
func (o *URLOpener) OpenBucketURL(_ context.Context, u *url.URL) (*blob.Bucket, error) {
	opts := o.Options
	for k, v := range u.Query() {
		switch k {
		case "create_dir":
			if v[0] != "" {
				opts.CreateDir = true
			}
		case "dir_file_mode":
			m, err := strconv.ParseUint(v[0], 0, 32)
			if err != nil {
				return nil, fmt.Errorf("localblob: invalid dir_file_mode %q: %w", v[0], err)
			}
			opts.DirFileMode = os.FileMode(m)
		case "no_tmp_dir":
		default:
			return nil, fmt.Errorf("localblob: invalid query parameter %q", k)
		}
	}
	p := u.Path
	if u.Host == "." || os.PathSeparator != '/' {
		p = strings.TrimPrefix(p, "/")
	}
	return OpenBucket(filepath.FromSlash(p), &opts)
}

func (b *bucket) path(key string) (string, error) {
	rel, err := relPath(key)
	if err != nil {
		return "", err
	}
	return filepath.Join(b.dir, rel), nil
}

// ErrorCode implements driver.Bucket.
func (b *bucket) ErrorCode(err error) gcerrors.ErrorCode {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return gcerrors.NotFound
	case errors.Is(err, errExists):
		return gcerrors.FailedPrecondition
	case errors.Is(err, errUnimplemented):
		return gcerrors.Unimplemented
	case errors.Is(err, errEmptyKey), errors.Is(err, errHeaderLarge):
		return gcerrors.InvalidArgument
	}
	return gcerrors.Unknown
}

// As implements driver.Bucket.
func (b *bucket) As(i any) bool {
	p, ok := i.(*os.FileInfo)
	if !ok {
		return false
	}
	fi, err := os.Stat(b.dir)
	if err != nil {
		return false
	}
	*p = fi
	return true
}

// ErrorAs implements driver.Bucket.
func (b *bucket) ErrorAs(err error, i any) bool {
	var perr *os.PathError
	if p, ok := i.(**os.PathError); ok && errors.As(err, &perr) {
		*p = perr
		return true
	}
	return false
}

// open opens key's file and reads its header.
func (b *bucket) open(key string) (*os.File, os.FileInfo, *attrs, int64, error) {
	path, err := b.path(key)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &os.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	var a *attrs
	var off int64
	if err == nil {
		a, off, err = readHeader(f)
	}
	if err == nil && fi.Size() < off {
		err = errDamaged
	}
	if err != nil {
		_ = f.Close()
		if !errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("localblob: %s: %w", path, err)
		}
		return nil, nil, nil, 0, err
	}
	return f, fi, a, off, nil
}

// Attributes implements driver.Bucket.
func (b *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, fi, a, off, err := b.open(key)
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	size := fi.Size() - off
	return &driver.Attributes{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		ContentType:        a.ContentType,
		Metadata:           a.Metadata,
		ModTime:            fi.ModTime(),
		Size:               size,
		ETag:               fmt.Sprintf("\"%x-%x\"", fi.ModTime().UnixNano(), size),
		AsFunc:             fileInfoAs(fi),
	}, nil
}

func fileInfoAs(fi os.FileInfo) func(any) bool {
	return func(i any) bool {
		p, ok := i.(*os.FileInfo)
		if ok {
			*p = fi
		}
		return ok
	}
}

func fileAs(f *os.File) func(any) bool {
	return func(i any) bool {
		p, ok := i.(**os.File)
		if ok {
			*p = f
		}
		return ok
	}
}

// NewRangeReader implements driver.Bucket.
func (b *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, fi, a, off, err := b.open(key)
	if err != nil {
		return nil, err
	}
	if opts.BeforeRead != nil {
		if err := opts.BeforeRead(fileAs(f)); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	size := fi.Size() - off
	if offset > size {
		offset = size
	}
	n := size - offset
	if length >= 0 && length < n {
		n = length
	}
	return &reader{
		r: io.NewSectionReader(f, off+offset, n),
		f: f,
		attrs: driver.ReaderAttributes{
			ContentType: a.ContentType,
			ModTime:     fi.ModTime(),
			Size:        size,
		},
	}, nil
}

type reader struct {
	r     *io.SectionReader
	f     *os.File
	attrs driver.ReaderAttributes
}

func (r *reader) Read(p []byte) (int, error)           { return r.r.Read(p) }
func (r *reader) Close() error                         { return r.f.Close() }
func (r *reader) Attributes() *driver.ReaderAttributes { return &r.attrs }

// As exposes the content as an io.Reader (fileblob does the same).
func (r *reader) As(i any) bool {
	p, ok := i.(*io.Reader)
	if ok {
		*p = r.r
	}
	return ok
}

// Copy implements driver.Bucket.
func (b *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	f, _, a, off, err := b.open(srcKey)
	if err != nil {
		return err
	}
	defer f.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewTypedWriter(wctx, dstKey, a.ContentType, &driver.WriterOptions{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		Metadata:           a.Metadata,
		BeforeWrite:        opts.BeforeCopy,
	})
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, io.NewSectionReader(f, off, 1<<62)); err != nil {
		cancel() // before Close: the write is dropped
		_ = w.Close()
		return err
	}
	return w.Close()
}

// Delete implements driver.Bucket.
func (b *bucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	if opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(func(any) bool { return false }); err != nil {
			return err
		}
	}
	path, err := b.path(key)
	if err != nil {
		return err
	}
	return os.Remove(path)
}

// SignedURL implements driver.Bucket: refused with Unimplemented, by design.
func (b *bucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errUnimplemented
}

// Close implements driver.Bucket.
func (b *bucket) Close() error { return nil }

// createTemp creates path.<hex nanoseconds>.tmp, the name fileblob gives
// its temporary files beside the final one.
func createTemp(path string) (*os.File, error) {
	for try := 0; ; try++ {
		name := path + "." + strconv.FormatInt(time.Now().UnixNano(), 16) + ".tmp"
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 1000 {
			continue
		}
		return f, err
	}
}
