//go:build !linux

package badgerstore

import (
	"errors"
	"os"
)

var (
	errNoSpace     = errors.New("no space left on device")
	errUnsupported = errors.New("not supported")
)

// The disk guard is Linux's (space.go): elsewhere the free space is
// unknown, so nothing is refused for it.

func diskFree(string) (int64, error)    { return 0, errUnsupported }
func allocate(*os.File, int64) error    { return errUnsupported }
func grow(f *os.File, size int64) error { return f.Truncate(size) }
func allocated(fi os.FileInfo) int64    { return fi.Size() }
