package badgerstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// dropEmptyValueLogs removes value-log files of zero bytes before Badger
// opens dir. A kill between Badger's creating the next value log and
// sizing it leaves one so, and Badger then refuses to open at all (it
// takes the empty file for a new one and returns that as an error). An
// empty file holds no entry, so nothing is lost.
func dropEmptyValueLogs(dir string, lg hclog.Logger) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".vlog") {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.Size() != 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil {
			return err
		}
		lg.Warn("removed an empty value log left by a kill while it was being created", "file", p)
	}
	return nil
}
