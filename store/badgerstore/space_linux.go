package badgerstore

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	errNoSpace     error = syscall.ENOSPC
	errUnsupported error = syscall.EOPNOTSUPP
)

// diskFree is what an unprivileged writer may still use on dir's file
// system.
func diskFree(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// allocate gives the first n bytes of f real blocks, its size unchanged.
func allocate(f *os.File, n int64) error {
	if n <= 0 {
		return nil
	}
	return fallocate(f, unix.FALLOC_FL_KEEP_SIZE, n)
}

// grow gives f size bytes of real blocks, its size set to size.
func grow(f *os.File, size int64) error {
	err := fallocate(f, 0, size)
	if !errors.Is(err, errUnsupported) {
		return err
	}
	// Writing zeros allocates them too.
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
		off += n
	}
	return f.Sync()
}

func fallocate(f *os.File, mode uint32, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), mode, 0, n)
		if err != unix.EINTR {
			if err == unix.ENOTSUP {
				return errUnsupported
			}
			return err
		}
	}
}

// allocated is how many bytes of fi have blocks.
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return 0
}
