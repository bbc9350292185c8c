package badgerstore

import (
	"sync"

	"github.com/tollgate-gw/tollgate/store"
)

// readCache keeps keys (by hash) and accounts in memory for the
// authentication path. This process is their only writer, so every write
// invalidates the cache; a generation number stops a read that started
// before a write from storing what it read after the write cleared it.
type readCache struct {
	mu       sync.RWMutex
	gen      uint64
	keys     map[string]store.Key // by hash
	accounts map[string]store.Account
}

func newReadCache() *readCache {
	return &readCache{keys: map[string]store.Key{}, accounts: map[string]store.Account{}}
}

// maxCached bounds each map; past it the map starts over.
const maxCached = 100_000

func (c *readCache) key(hash []byte) (store.Key, uint64, bool) {
	return lookup(c, c.keys, string(hash))
}

func (c *readCache) putKey(k store.Key, gen uint64) { remember(c, c.keys, string(k.Hash), k, gen) }

func (c *readCache) account(id string) (store.Account, uint64, bool) {
	return lookup(c, c.accounts, id)
}

func (c *readCache) putAccount(a store.Account, gen uint64) { remember(c, c.accounts, a.ID, a, gen) }

// lookup reads one of the cache's maps: the entry, and the generation to
// remember a store read under.
func lookup[V any](c *readCache, m map[string]V, id string) (V, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := m[id]
	return v, c.gen, ok
}

// remember stores what a read under generation gen found, unless a write
// invalidated the cache since.
func remember[V any](c *readCache, m map[string]V, id string, v V, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(m) >= maxCached {
		clear(m)
	}
	m[id] = v
}

// invalidate forgets everything; called after every key or account write.
func (c *readCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.keys)
	clear(c.accounts)
}
