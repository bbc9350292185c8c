package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The key layout. Every prefix lives here, once; a prefix is never reused
// for another record, even after it falls out of use. Integers are
// big-endian so byte order is numeric order; a variable-length string that
// is followed by more key parts ends with sep, which ids may not contain.
// docs/store.md describes the same layout for operators.
const (
	pAccount  = "acct/"     // acct/{account}                          -> account
	pWallet   = "wallet/"   // wallet/{account}                        -> balance(8) held(8)
	pLedger   = "ledger/"   // ledger/{account}\x00{id:8}              -> ledger entry (JSON)
	pHold     = "hold/"     // hold/{hold}                             -> hold
	pKey      = "key/"      // key/{key}                               -> key
	pKeyHash  = "keyh/"     // keyh/{sha256}                           -> key id
	pKeyAcct  = "keyacct/"  // keyacct/{account}\x00{key}              -> empty
	pKeyUse   = "keyuse/"   // keyuse/{key}                            -> charged total(8)
	pLog      = "log/"      // log/{id:8}                              -> log row
	pLogAcct  = "logacct/"  // logacct/{account}\x00{ts:12}{id:8}      -> index value
	pLogKey   = "logkey/"   // logkey/{account}\x00{key}\x00{ts:12}{id:8} -> index value
	pLogRef   = "logref/"   // logref/{request or task id}\x00{id:8}   -> empty
	pModel    = "model/"    // model/{model}                           -> model (JSON)
	pSeq      = "seq/"      // seq/log, seq/ledger                     -> badger.Sequence state
	pMeta     = "meta/"     // meta/journal, meta/logdims, meta/taskcoll, meta/run, meta/books, meta/bookcarry -> last journal record applied(8); empty; run id; empty; count(8)
	pKeyUsed  = "keyused/"  // keyused/{key}                           -> last use, time(12)
	pIdem     = "idem/"     // idem/{account}\x00{idempotency key}     -> idempotency record
	pLogMod   = "logmod/"   // logmod/{account}\x00{model}\x00{ts:12}{id:8} -> key id, index value
	pLogErr   = "logerr/"   // logerr/{account}\x00{code}\x00{ts:12}{id:8}  -> key id, index value
	pTask     = "task/"     // task/{task}                                   -> task (JSON, without job and body)
	pTaskJob  = "taskjob/"  // taskjob/{task}                                -> the job as the plugin gets it
	pTaskBody = "taskbody/" // taskbody/{task}                               -> the result body
	pTaskAcct = "taskacct/" // taskacct/{account}\x00{family}\x00{ts:12}{task} -> empty: newest-first lists
	pTaskOpen = "taskopen/" // taskopen/{account}\x00{task}                   -> empty: unfinished tasks
	pTaskColl = "taskcoll/" // taskcoll/{account}\x00{collection}\x00{ts:12}{task} -> empty: a route's newest-first lists
	pTaskExp  = "taskexp/"  // taskexp/{ts:12}{task}                          -> empty: succeeded tasks by result expiry
	pKB       = "kb/"       // kb/{kb}                                          -> knowledge base (JSON)
	pKBPage   = "kbpage/"   // kbpage/{page}                                    -> page (JSON); ids are global
	pKBPages  = "kbpages/"  // kbpages/{kb}\x00{page}                           -> empty: a base's pages by id
	pKBTag    = "kbtag/"    // kbtag/{kb}\x00{folded tag}\x00{page}              -> the tag as the page writes it
	pKBName   = "kbname/"   // kbname/{kb}\x00{folded name}\x00{rank:1}{page}    -> empty: link targets (id, title, alias)
	pKBLink   = "kblink/"   // kblink/{kb}\x00{folded target}\x00{page}         -> empty: who links to a name
	pKBChg    = "kbchg/"    // kbchg/{seq:8}                                    -> page change: the latest of each page
	pKBGone   = "kbgone/"   // kbgone/{page}                                    -> seq(8) of its deletion's change
	pKBSrc    = "kbsrc/"    // kbsrc/{kb}\x00{r2_key}                           -> source file record (JSON)
)

// The agents role's records (agents.go).
const (
	pAgent     = "agent/"      // agent/{agent}                      -> agent (JSON)
	pAgentAcct = "agentacct/"  // agentacct/{account}\x00{agent}     -> empty
	pKeyReq    = "keyreq/"     // keyreq/{request}                   -> key request (JSON)
	pKeyReqAcc = "keyreqacct/" // keyreqacct/{account}\x00{request}  -> empty
	pOrg       = "org/"        // org/{account}                      -> organization (JSON)
)

// The console's records (users.go, sessions.go).
const (
	pUser       = "user/"       // user/{user}                           -> user (JSON)
	pUserEmail  = "useremail/"  // useremail/{folded email}              -> user id
	pUserAcct   = "useracct/"   // useracct/{account}\x00{user}          -> empty
	pInvite     = "invite/"     // invite/{invitation}                   -> invitation (JSON)
	pInviteAcct = "inviteacct/" // inviteacct/{account}\x00{invitation}  -> empty
	pSession    = "session/"    // session/{session}                     -> session (JSON)
	pSessUser   = "sessuser/"   // sessuser/{user}\x00{session}          -> empty
	pSignIn     = "signin/"     // signin/{subject}                      -> failed sign-ins (JSON)
)

// The card top-ups' records (orders.go).
const (
	pOrder     = "order/"     // order/{order}                          -> order (JSON)
	pOrderAcct = "orderacct/" // orderacct/{account}\x00{ts:12}{order}  -> empty: an account's orders by time
	pOrderAll  = "orderall/"  // orderall/{ts:12}{order}                -> empty: every order by time
	pOrderRef  = "orderref/"  // orderref/{session or payment id}       -> order id
)

// The books: every money move, append-only (books.go).
const (
	pBook = "book/" // book/{seq:8} -> book entry: the move of journal record seq
)

const sep = 0x00

// tsLen is the width of an encoded time: seconds (8, sign bit flipped so
// negative seconds sort first) then nanoseconds (4).
const tsLen = 12

// posLen is the fixed tail of a log index key: time then row id.
const posLen = tsLen + 8

var errBadID = errors.New("badgerstore: id is empty or contains a NUL byte")

// checkID refuses ids that would make the key layout ambiguous.
func checkID(what, id string) error {
	if !validID(id) {
		return fmt.Errorf("%s %q: %w", what, id, errBadID)
	}
	return nil
}

func validID(id string) bool { return id != "" && strings.IndexByte(id, sep) < 0 }

func strKey(prefix, id string) []byte {
	b := make([]byte, 0, len(prefix)+len(id))
	return append(append(b, prefix...), id...)
}

func accountKey(id string) []byte { return strKey(pAccount, id) }
func walletKey(id string) []byte  { return strKey(pWallet, id) }
func holdKey(id string) []byte    { return strKey(pHold, id) }
func keyKey(id string) []byte     { return strKey(pKey, id) }
func keyUseKey(id string) []byte  { return strKey(pKeyUse, id) }
func keyUsedKey(id string) []byte { return strKey(pKeyUsed, id) }
func modelKey(id string) []byte   { return strKey(pModel, id) }

func keyHashKey(hash []byte) []byte {
	b := make([]byte, 0, len(pKeyHash)+len(hash))
	return append(append(b, pKeyHash...), hash...)
}

// scoped is prefix{a}\x00: the prefix of every key under one account.
func scoped(prefix, a string) []byte {
	b := make([]byte, 0, len(prefix)+len(a)+1+posLen)
	return append(append(append(b, prefix...), a...), sep)
}

func keyAcctKey(account, key string) []byte { return append(scoped(pKeyAcct, account), key...) }

func ledgerKey(account string, id uint64) []byte {
	return binary.BigEndian.AppendUint64(scoped(pLedger, account), id)
}

func logKey(id uint64) []byte {
	b := make([]byte, 0, len(pLog)+8)
	return binary.BigEndian.AppendUint64(append(b, pLog...), id)
}

func logAcctPrefix(account string) []byte { return scoped(pLogAcct, account) }

func logKeyPrefix(account, key string) []byte {
	return append(append(scoped(pLogKey, account), key...), sep)
}

func logRefPrefix(ref string) []byte { return scoped(pLogRef, ref) }

// logDimPrefix is the start of one value's entries in a per-value log
// index (pLogMod, pLogErr).
func logDimPrefix(dim, account, value string) []byte {
	return append(append(scoped(dim, account), value...), sep)
}

// appendTS appends t in tsLen bytes whose byte order is time order.
func appendTS(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t.Unix())^(1<<63))
	return binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

func parseTS(b []byte) time.Time {
	sec := int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
	return time.Unix(sec, int64(binary.BigEndian.Uint32(b[8:]))).UTC()
}

// appendPos appends a (created_at, id) position as a log index key tail.
func appendPos(b []byte, t time.Time, id uint64) []byte {
	return binary.BigEndian.AppendUint64(appendTS(b, t), id)
}

// putID overwrites the trailing 8-byte id of a prebuilt key.
func putID(k []byte, id uint64) { binary.BigEndian.PutUint64(k[len(k)-8:], id) }

func tailID(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

// seekPast returns a key greater than every key under prefix.
func seekPast(prefix []byte) []byte {
	return append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, posLen+1)...)
}

var (
	seqLogKey    = []byte(pSeq + "log")
	seqLedgerKey = []byte(pSeq + "ledger")
)

func appendID(b []byte, id uint64) []byte { return binary.BigEndian.AppendUint64(b, id) }

// journalKey holds the number of the last journal record Badger has.
var journalKey = []byte(pMeta + "journal")

// kbSeqKey holds the number of the last knowledge page change.
var kbSeqKey = []byte(pMeta + "kbseq")

// logDimsKey marks a store whose rows all have their per-value index
// entries (stores from before those indexes get them once, at open).
var logDimsKey = []byte(pMeta + "logdims")

// taskCollKey marks a store whose tasks are indexed by collection.
var taskCollDoneKey = []byte(pMeta + "taskcoll")

// runKey names the run (an open of the store) that placed the holds the
// write-ahead journal may still hold; booksKey marks a store that keeps
// the books, carryKey counts the carry entries written while it starts
// keeping them (books.go).
var (
	runKey   = []byte(pMeta + "run")
	booksKey = []byte(pMeta + "books")
	carryKey = []byte(pMeta + "bookcarry")
)

func bookKey(seq uint64) []byte {
	b := make([]byte, 0, len(pBook)+8)
	return binary.BigEndian.AppendUint64(append(b, pBook...), seq)
}

func encodeSeq(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
