package localblob

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gocloud.dev/blob/driver"
)

const defaultPageSize = 1000

// entry is a key found by a listing: a blob, or a "directory" when a
// delimiter folds keys.
type entry struct {
	key   string
	isDir bool
}

// ListPaged implements driver.Bucket. Each page reads the names under the
// directory (only the directories the prefix can reach) and opens the
// page's own blobs for their sizes; the token is the last key given.
func (b *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if opts.BeforeList != nil {
		if err := opts.BeforeList(func(any) bool { return false }); err != nil {
			return nil, err
		}
	}
	var found []entry
	if err := b.walk(ctx, "", opts.Prefix, &found); err != nil {
		return nil, err
	}
	if opts.Delimiter != "" {
		found = fold(found, opts.Prefix, opts.Delimiter)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].key < found[j].key })
	token := string(opts.PageToken)
	i := sort.Search(len(found), func(i int) bool { return found[i].key > token })
	found = found[i:]
	size := opts.PageSize
	if size == 0 {
		size = defaultPageSize
	}
	var page driver.ListPage
	if len(found) > size {
		found = found[:size]
		page.NextPageToken = []byte(found[size-1].key)
	}
	for _, e := range found {
		if e.isDir {
			page.Objects = append(page.Objects, &driver.ListObject{Key: e.key, IsDir: true})
			continue
		}
		f, fi, _, off, err := b.open(e.key)
		if err != nil {
			continue // deleted since the walk
		}
		_ = f.Close()
		page.Objects = append(page.Objects, &driver.ListObject{
			Key:     e.key,
			ModTime: fi.ModTime(),
			Size:    fi.Size() - off,
			AsFunc:  fileInfoAs(fi),
		})
	}
	return &page, nil
}

// walk appends the blobs under the directory rel whose keys begin with
// prefix, skipping the directories whose keys cannot.
func (b *bucket) walk(ctx context.Context, rel, prefix string, found *[]entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Join(b.dir, rel))
	if err != nil {
		if rel != "" {
			return nil // removed meanwhile
		}
		return err
	}
	ents, err := d.ReadDir(-1)
	_ = d.Close()
	if err != nil && rel == "" {
		return err
	}
	for _, e := range ents {
		p := e.Name()
		if rel != "" {
			p = rel + string(filepath.Separator) + p
		}
		if e.IsDir() {
			dk := unescape(filepath.ToSlash(p)) + "/"
			if strings.HasPrefix(dk, prefix) || strings.HasPrefix(prefix, dk) {
				if err := b.walk(ctx, p, prefix, found); err != nil {
					return err
				}
			}
			continue
		}
		if !e.Type().IsRegular() {
			continue
		}
		if k, ok := KeyOf(p); ok && strings.HasPrefix(k, prefix) {
			*found = append(*found, entry{key: k})
		}
	}
	return nil
}

// fold replaces the keys that hold delim after prefix by their
// "directory" (prefix, the key up to and with the delimiter), once each.
func fold(found []entry, prefix, delim string) []entry {
	seen := map[string]bool{}
	out := found[:0]
	for _, e := range found {
		if i := strings.Index(e.key[len(prefix):], delim); i >= 0 {
			dir := e.key[:len(prefix)+i+len(delim)]
			if seen[dir] {
				continue
			}
			seen[dir] = true
			e = entry{key: dir, isDir: true}
		}
		out = append(out, e)
	}
	return out
}
