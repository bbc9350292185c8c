package badgerstore

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// Records on the hot path (log rows, holds, keys, accounts) use a compact
// binary encoding: a version byte, then fields in a fixed order, strings and
// byte slices as uvarint length + bytes, integers as varints. Decoding
// converts the value to one string and slices every string field from it,
// so a row costs one allocation plus its slices. BenchmarkRowCodec compares
// it with encoding/json.

const (
	vRow     = 1
	vHold    = 3 // 1: without TaskID; 2: without SpendCap
	vKey     = 3 // 1: without AgentID and SpendCap; 2: without UserID
	vAccount = 1
)

var errCorrupt = errors.New("badgerstore: corrupt record")

type enc struct{ b []byte }

func (e *enc) byte(c byte)      { e.b = append(e.b, c) }
func (e *enc) uint(v uint64)    { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) int(v int64)      { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string)     { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) bytes(p []byte)   { e.uint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) time(t time.Time) { e.int(t.Unix()); e.uint(uint64(t.Nanosecond())) }

func (e *enc) bool(v bool) {
	if v {
		e.byte(1)
	} else {
		e.byte(0)
	}
}

func (e *enc) optTime(t *time.Time) {
	e.bool(t != nil)
	if t != nil {
		e.time(*t)
	}
}

func (e *enc) optNano(n *money.Nano) {
	e.bool(n != nil)
	if n != nil {
		e.int(int64(*n))
	}
}

func (e *enc) strs(v []string) {
	e.uint(uint64(len(v)))
	for _, s := range v {
		e.str(s)
	}
}

func (e *enc) kvs(v []store.KV) {
	e.uint(uint64(len(v)))
	for _, kv := range v {
		e.str(kv.K)
		e.str(kv.V)
	}
}

// dec reads from a string so string fields share its memory. The first
// error sticks; later reads return zero values.
type dec struct {
	s   string
	i   int
	err error
}

func (d *dec) fail() { d.err, d.i = errCorrupt, len(d.s) }

func (d *dec) byte() byte {
	if d.i >= len(d.s) {
		d.fail()
		return 0
	}
	c := d.s[d.i]
	d.i++
	return c
}

func (d *dec) uint() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if d.i >= len(d.s) {
			d.fail()
			return 0
		}
		c := d.s[d.i]
		d.i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	d.fail()
	return 0
}

func (d *dec) int() int64 {
	u := d.uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *dec) str() string {
	n := d.uint()
	if n > uint64(len(d.s)-d.i) {
		d.fail()
		return ""
	}
	s := d.s[d.i : d.i+int(n)]
	d.i += int(n)
	return s
}

func (d *dec) bytes() []byte {
	s := d.str()
	if s == "" {
		return nil
	}
	return []byte(s)
}

func (d *dec) bool() bool { return d.byte() != 0 }

func (d *dec) time() time.Time {
	sec := d.int()
	nsec := d.uint()
	if nsec >= 1e9 {
		d.fail()
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *dec) optTime() *time.Time {
	if !d.bool() {
		return nil
	}
	t := d.time()
	return &t
}

func (d *dec) optNano() *money.Nano {
	if !d.bool() {
		return nil
	}
	n := money.Nano(d.int())
	return &n
}

// count reads a slice length, refusing lengths the rest cannot hold.
func (d *dec) count() int {
	n := d.uint()
	if n > uint64(len(d.s)-d.i) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *dec) strs() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = d.str()
	}
	return v
}

func (d *dec) kvs() []store.KV {
	n := d.count()
	if n == 0 {
		return nil
	}
	v := make([]store.KV, n)
	for i := range v {
		v[i] = store.KV{K: d.str(), V: d.str()}
	}
	return v
}

func (d *dec) version(want byte) {
	if d.byte() != want {
		d.fail()
	}
}

// done reports the sticky error, or trailing bytes as corruption.
func (d *dec) done() error {
	if d.err == nil && d.i != len(d.s) {
		return errCorrupt
	}
	return d.err
}

// Row flags: which optional parts follow.
const (
	fUnitCount = 1 << iota
	fResultExpires
	fAttemptsCount
	fTech
)

// encodeRow appends r without its ID, which lives in the key.
func encodeRow(b []byte, r *store.LogRow) []byte {
	e := enc{b}
	e.byte(vRow)
	e.str(r.AccountID)
	e.time(r.CreatedAt)
	e.time(r.SubmittedAt)
	e.str(r.KeyID)
	e.str(r.KeyName)
	e.str(r.KeyPrefix)
	e.str(r.Model)
	e.str(r.Status)
	e.str(r.ErrorCode)
	e.str(r.ErrorMessage)
	e.int(r.InputTokens)
	e.int(r.OutputTokens)
	e.int(r.CachedTokens)
	e.str(r.UnitType)
	e.int(int64(r.Cost))
	e.int(r.LatencyMS)
	e.str(r.RequestID)
	e.str(r.TaskID)
	e.strs(r.ResultURLs)
	var flags byte
	if r.UnitCount != nil {
		flags |= fUnitCount
	}
	if r.ResultExpiresAt != nil {
		flags |= fResultExpires
	}
	if r.AttemptsCount != nil {
		flags |= fAttemptsCount
	}
	if r.Tech != nil {
		flags |= fTech
	}
	e.byte(flags)
	if r.UnitCount != nil {
		e.int(*r.UnitCount)
	}
	if r.ResultExpiresAt != nil {
		e.time(*r.ResultExpiresAt)
	}
	if r.AttemptsCount != nil {
		e.int(int64(*r.AttemptsCount))
	}
	e.uint(uint64(len(r.Attempts)))
	for _, a := range r.Attempts {
		e.int(int64(a.Seq))
		e.time(a.CreatedAt)
		e.int(a.LatencyMS)
		e.str(a.ErrorCode)
		e.str(a.ErrorMessage)
	}
	if t := r.Tech; t != nil {
		e.str(t.Kind)
		e.kvs(t.Request)
		e.kvs(t.Upstream)
		e.kvs(t.Gateway)
		e.str(t.RequestNote)
	}
	return e.b
}

func decodeRow(v []byte, id uint64) (store.LogRow, error) {
	d := dec{s: string(v)}
	d.version(vRow)
	r := store.LogRow{
		ID:           id,
		AccountID:    d.str(),
		CreatedAt:    d.time(),
		SubmittedAt:  d.time(),
		KeyID:        d.str(),
		KeyName:      d.str(),
		KeyPrefix:    d.str(),
		Model:        d.str(),
		Status:       d.str(),
		ErrorCode:    d.str(),
		ErrorMessage: d.str(),
		InputTokens:  d.int(),
		OutputTokens: d.int(),
		CachedTokens: d.int(),
		UnitType:     d.str(),
		Cost:         money.Nano(d.int()),
		LatencyMS:    d.int(),
		RequestID:    d.str(),
		TaskID:       d.str(),
		ResultURLs:   d.strs(),
	}
	flags := d.byte()
	if flags&fUnitCount != 0 {
		n := d.int()
		r.UnitCount = &n
	}
	if flags&fResultExpires != 0 {
		t := d.time()
		r.ResultExpiresAt = &t
	}
	if flags&fAttemptsCount != 0 {
		n := int(d.int())
		r.AttemptsCount = &n
	}
	if n := d.count(); n > 0 {
		r.Attempts = make([]store.Attempt, n)
		for i := range r.Attempts {
			r.Attempts[i] = store.Attempt{
				Seq: int(d.int()), CreatedAt: d.time(), LatencyMS: d.int(),
				ErrorCode: d.str(), ErrorMessage: d.str(),
			}
		}
	}
	if flags&fTech != 0 {
		r.Tech = &store.TechView{
			Kind: d.str(), Request: d.kvs(), Upstream: d.kvs(), Gateway: d.kvs(), RequestNote: d.str(),
		}
	}
	return r, d.done()
}

// encodeIndex is the value of both log indexes: the fields QueryLogs
// filters on, so most filtering never reads the row.
// encodeIndex is the value of a log index entry: the filter fields, then
// the totals a summary needs, so neither filters nor summaries read rows.
func encodeIndex(b []byte, r *store.LogRow) []byte {
	e := enc{b}
	e.str(r.Status)
	e.str(r.Model)
	e.str(r.UnitType)
	e.str(r.ErrorCode)
	b = binary.AppendVarint(e.b, int64(r.Cost))
	b = binary.AppendVarint(b, r.InputTokens)
	b = binary.AppendVarint(b, r.OutputTokens)
	return binary.AppendVarint(b, r.CachedTokens)
}

// appendDimValue appends the value of a per-value index entry: the row's
// key id (so a key-scoped page can use it), then the index value.
func appendDimValue(b []byte, keyID string, idxVal []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(keyID)))
	return append(append(b, keyID...), idxVal...)
}

// dimParts splits a per-value index value.
func dimParts(v []byte) (keyID, idxVal []byte, ok bool) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return nil, nil, false
	}
	return v[w : w+int(n)], v[w+int(n):], true
}

// indexFields splits an index value without allocating.
func indexFields(v []byte) (status, model, unitType, errorCode []byte, ok bool) {
	status, model, unitType, errorCode, _, ok = indexParts(v)
	return
}

func indexParts(v []byte) (status, model, unitType, errorCode, rest []byte, ok bool) {
	var f [4][]byte
	for i := range f {
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return nil, nil, nil, nil, nil, false
		}
		f[i], v = v[w:w+int(n)], v[w+int(n):]
	}
	return f[0], f[1], f[2], f[3], v, true
}

// indexTotals reads the totals after the filter fields; ok is false for
// an entry written without them.
func indexTotals(rest []byte) (cost money.Nano, in, out, cached int64, ok bool) {
	var f [4]int64
	for i := range f {
		n, w := binary.Varint(rest)
		if w <= 0 {
			return 0, 0, 0, 0, false
		}
		f[i], rest = n, rest[w:]
	}
	return money.Nano(f[0]), f[1], f[2], f[3], len(rest) == 0
}

func encodeHold(b []byte, h *store.Hold) []byte {
	e := enc{b}
	e.byte(vHold)
	e.str(h.ID)
	e.str(h.AccountID)
	e.str(h.KeyID)
	e.str(h.KeyName)
	e.str(h.KeyPrefix)
	e.str(h.Model)
	e.str(h.UnitType)
	e.int(int64(h.Amount))
	e.time(h.SubmittedAt)
	e.str(h.TaskID)
	e.optNano(h.SpendCap)
	return e.b
}

func decodeHold(v []byte) (store.Hold, error) {
	d := dec{s: string(v)}
	ver := d.byte()
	if ver < 1 || ver > vHold {
		d.fail()
	}
	h := store.Hold{
		ID: d.str(), AccountID: d.str(), KeyID: d.str(), KeyName: d.str(), KeyPrefix: d.str(),
		Model: d.str(), UnitType: d.str(), Amount: money.Nano(d.int()), SubmittedAt: d.time(),
	}
	if ver >= 2 {
		h.TaskID = d.str()
	}
	if ver >= 3 {
		h.SpendCap = d.optNano()
	}
	return h, d.done()
}

func encodeKey(k *store.Key) []byte {
	e := enc{make([]byte, 0, 128+len(k.Sealed))}
	e.byte(vKey)
	e.str(k.ID)
	e.str(k.AccountID)
	e.str(k.Name)
	e.str(k.Prefix)
	e.bytes(k.Hash)
	e.bytes(k.Sealed)
	e.bool(k.RestrictModels)
	e.strs(k.AllowedModels)
	e.optTime(k.ExpiresAt)
	e.bool(k.Enabled)
	e.bool(k.LogsAccountScope)
	e.str(k.Kind)
	e.time(k.CreatedAt)
	e.optTime(k.LastUsedAt)
	e.str(k.AgentID)
	e.optNano(k.SpendCap)
	e.str(k.UserID)
	return e.b
}

func decodeKey(v []byte) (store.Key, error) {
	d := dec{s: string(v)}
	ver := d.byte()
	if ver < 1 || ver > vKey {
		d.fail()
	}
	k := store.Key{
		ID: d.str(), AccountID: d.str(), Name: d.str(), Prefix: d.str(), Hash: d.bytes(), Sealed: d.bytes(),
		RestrictModels: d.bool(), AllowedModels: d.strs(), ExpiresAt: d.optTime(), Enabled: d.bool(),
		LogsAccountScope: d.bool(), Kind: d.str(), CreatedAt: d.time(), LastUsedAt: d.optTime(),
	}
	if ver >= 2 {
		k.AgentID, k.SpendCap = d.str(), d.optNano()
	}
	if ver >= 3 {
		k.UserID = d.str()
	}
	return k, d.done()
}

func encodeAccount(a *store.Account) []byte {
	e := enc{make([]byte, 0, 32+len(a.ID)+len(a.Name))}
	e.byte(vAccount)
	e.str(a.ID)
	e.str(a.Name)
	e.str(a.Status)
	e.time(a.CreatedAt)
	e.int(int64(a.RPM))
	e.int(int64(a.Concurrency))
	return e.b
}

func decodeAccount(v []byte) (store.Account, error) {
	d := dec{s: string(v)}
	d.version(vAccount)
	a := store.Account{
		ID: d.str(), Name: d.str(), Status: d.str(), CreatedAt: d.time(),
		RPM: int(d.int()), Concurrency: int(d.int()),
	}
	return a, d.done()
}

func encodeWallet(w store.Wallet) []byte {
	b := make([]byte, 0, 16)
	b = binary.BigEndian.AppendUint64(b, uint64(w.Balance))
	return binary.BigEndian.AppendUint64(b, uint64(w.Held))
}

func decodeWallet(account string, v []byte) (store.Wallet, error) {
	if len(v) != 16 {
		return store.Wallet{}, errCorrupt
	}
	return store.Wallet{
		AccountID: account,
		Balance:   money.Nano(binary.BigEndian.Uint64(v)),
		Held:      money.Nano(binary.BigEndian.Uint64(v[8:])),
	}, nil
}

func encodeNano(n money.Nano) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func decodeNano(v []byte) (money.Nano, error) {
	if len(v) != 8 {
		return 0, errCorrupt
	}
	return money.Nano(binary.BigEndian.Uint64(v)), nil
}
