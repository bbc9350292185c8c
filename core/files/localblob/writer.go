package localblob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"gocloud.dev/blob/driver"
)

// NewTypedWriter implements driver.Bucket: the header and the content go
// to a temporary file beside the blob's, renamed into place by Close.
func (b *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	path, err := b.path(key)
	if err != nil {
		return nil, err
	}
	hdr, err := appendHeader(nil, &attrs{
		ContentType:        contentType,
		CacheControl:       opts.CacheControl,
		ContentDisposition: opts.ContentDisposition,
		ContentEncoding:    opts.ContentEncoding,
		ContentLanguage:    opts.ContentLanguage,
		Metadata:           opts.Metadata,
	})
	if err != nil {
		return nil, err
	}
	f, err := createTemp(path)
	if errors.Is(err, fs.ErrNotExist) {
		// A key in a directory not made yet, or the bucket's directory
		// removed under a running program: made on demand, not stat'ed on
		// every write.
		if err = os.MkdirAll(filepath.Dir(path), b.dirMode); err == nil {
			f, err = createTemp(path)
		}
	}
	if err != nil {
		return nil, err
	}
	w := &writer{ctx: ctx, f: f, path: path, ifNotExist: opts.IfNotExist}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(fileAs(f)); err != nil {
			w.abort()
			return nil, err
		}
	}
	if _, err := f.Write(hdr); err != nil {
		w.abort()
		return nil, err
	}
	return w, nil
}

// writer is a blob file under a temporary name until Close.
type writer struct {
	ctx        context.Context
	f          *os.File
	path       string
	ifNotExist bool
	err        error // the first failed Write: Close then keeps nothing
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

func (w *writer) abort() {
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
}

// Close implements driver.Writer: the blob appears whole, or not at all
// when a Write failed or ctx ended (then Close returns why).
func (w *writer) Close() error {
	tmp := w.f.Name()
	err := w.f.Close()
	if err == nil {
		err = w.err
	}
	if err == nil {
		err = w.ctx.Err()
	}
	if err == nil {
		if w.ifNotExist {
			// A link fails when the name exists: the check and the write
			// are one step.
			if err = os.Link(tmp, w.path); errors.Is(err, fs.ErrExist) {
				err = fmt.Errorf("%w: %s", errExists, w.path)
			}
		} else {
			err = os.Rename(tmp, w.path)
		}
	}
	if err != nil || w.ifNotExist {
		_ = os.Remove(tmp)
	}
	return err
}
