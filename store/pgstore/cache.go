package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tollgate-gw/tollgate/store"
)

// authCache keeps keys (by hash), accounts, agents and organization
// policies for the authentication and agent stages, which would otherwise
// read them on every request. Other instances write
// them too, so every key or account write also moves the 'auth' change
// counter in the store (same statement), and each instance reads the
// counter every 250 ms, off the request path: a new value drops the cache.
//
// An entry is used only while the last successful read of the counter
// started less than two periods ago: if the database stops answering the
// poll, the cache stops answering too and every lookup reads the store.
// So a key revoked, disabled or deleted on one instance is refused by
// every instance within 500 ms (docs/decisions.md), without a round trip
// per request. A generation number stops a read that began before a drop
// from storing what it read after it.
type authCache struct {
	every time.Duration

	mu       sync.RWMutex
	gen      uint64
	seen     int64     // the counter's value at the last poll
	polled   time.Time // when the last successful poll began
	keys     map[string]store.Key
	accounts map[string]store.Account
	agents   map[string]store.Agent
	orgs     map[string]store.Organization
}

func newAuthCache(every time.Duration) *authCache {
	return &authCache{every: every, keys: map[string]store.Key{}, accounts: map[string]store.Account{},
		agents: map[string]store.Agent{}, orgs: map[string]store.Organization{}}
}

// maxCached bounds each map; past it the map starts over.
const maxCached = 100_000

// trusted reports whether entries may answer; c.mu is held.
func (c *authCache) trusted() bool { return time.Since(c.polled) < 2*c.every }

func (c *authCache) key(hash []byte) (store.Key, uint64, bool) {
	return lookup(c, c.keys, string(hash))
}

func (c *authCache) putKey(k store.Key, gen uint64) { remember(c, c.keys, string(k.Hash), k, gen) }

func (c *authCache) account(id string) (store.Account, uint64, bool) {
	return lookup(c, c.accounts, id)
}

func (c *authCache) putAccount(a store.Account, gen uint64) { remember(c, c.accounts, a.ID, a, gen) }

func (c *authCache) agent(id string) (store.Agent, uint64, bool) { return lookup(c, c.agents, id) }

func (c *authCache) putAgent(a store.Agent, gen uint64) { remember(c, c.agents, a.ID, a, gen) }

func (c *authCache) organization(account string) (store.Organization, uint64, bool) {
	return lookup(c, c.orgs, account)
}

func (c *authCache) putOrganization(o store.Organization, gen uint64) {
	remember(c, c.orgs, o.AccountID, o, gen)
}

// lookup reads one of the cache's maps: the entry, the generation to
// remember a store read under, and whether the entry may answer.
func lookup[V any](c *authCache, m map[string]V, id string) (V, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := m[id]
	return v, c.gen, ok && c.trusted()
}

// remember stores what a read under generation gen found, unless the
// cache was dropped since.
func remember[V any](c *authCache, m map[string]V, id string, v V, gen uint64) {
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

// invalidate drops everything (this instance's own writes).
func (c *authCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
}

func (c *authCache) drop() {
	c.gen++
	clear(c.keys)
	clear(c.accounts)
	clear(c.agents)
	clear(c.orgs)
}

// poll reads the change counter and drops the cache when it moved.
func (c *authCache) poll(ctx context.Context, pool *pgxpool.Pool) error {
	began := time.Now()
	var n int64
	if err := pool.QueryRow(ctx, `SELECT n FROM changes WHERE name = 'auth'`).Scan(&n); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n != c.seen {
		c.drop()
		c.seen = n
	}
	c.polled = began
	return nil
}

// pollChanges runs poll every period until the store closes.
func (s *Store) pollChanges() {
	defer s.wg.Done()
	t := time.NewTicker(s.cache.every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.cache.poll(ctx, s.pool)
		cancel()
		switch {
		case err != nil && !failing:
			s.log.Warn("cannot read the store's change counter; keys and accounts are read from the store on every request until it answers", "error", err)
			failing = true
		case err == nil && failing:
			s.log.Info("the store's change counter answers again")
			failing = false
		}
	}
}

// bumpAuth is the statement fragment that moves the 'auth' counter; key
// and account writes run it in their own statement.
const bumpAuth = `UPDATE changes SET n = n + 1 WHERE name = 'auth'`
