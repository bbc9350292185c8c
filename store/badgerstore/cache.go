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
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keys[string(hash)]
	return k, c.gen, ok
}

func (c *readCache) putKey(k store.Key, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.keys) >= maxCached {
		clear(c.keys)
	}
	c.keys[string(k.Hash)] = k
}

func (c *readCache) account(id string) (store.Account, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.accounts[id]
	return a, c.gen, ok
}

func (c *readCache) putAccount(a store.Account, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.accounts) >= maxCached {
		clear(c.accounts)
	}
	c.accounts[a.ID] = a
}

// invalidate forgets everything; called after every key or account write.
func (c *readCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.keys)
	clear(c.accounts)
}
