-- The books (store.Books): every money move, one row each, inserted by the
-- statement that makes the move (a credit with its ledger entry, a hold
-- with its wallet's update, a settlement with its row), and never changed:
-- a trigger refuses UPDATE, DELETE and TRUNCATE. kind is credit, hold,
-- settle, refund (a task's settlement charging nothing) or carry (an
-- account's balance when the books began, in this migration; log_id is
-- then the last row written before them). An audit (`tollgate audit`)
-- proves the wallets, the open holds and the rows from these rows alone.

CREATE TABLE book (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text NOT NULL,
    account_id  text NOT NULL,
    amount      bigint NOT NULL,
    charge      bigint NOT NULL DEFAULT 0,
    hold_id     text NOT NULL DEFAULT '',
    request_id  text NOT NULL DEFAULT '',
    task_id     text NOT NULL DEFAULT '',
    order_id    text NOT NULL DEFAULT '',
    admin_token text NOT NULL DEFAULT '',
    user_id     text NOT NULL DEFAULT '',
    ledger_id   bigint NOT NULL DEFAULT 0,
    log_id      bigint NOT NULL DEFAULT 0,
    owner       text NOT NULL DEFAULT '',
    note        text NOT NULL DEFAULT '',
    created_at  bigint NOT NULL
);

CREATE FUNCTION book_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the books are append-only: an entry is never changed or removed';
END
$$;
CREATE TRIGGER book_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON book
    FOR EACH STATEMENT EXECUTE FUNCTION book_append_only();

-- A credit's cause (store.Cause) beside its order.
ALTER TABLE ledger ADD COLUMN admin_token text NOT NULL DEFAULT '',
                   ADD COLUMN user_id text NOT NULL DEFAULT '';

-- The books begin with what the tables hold now: each open hold, then each
-- wallet's balance.
INSERT INTO book (kind, account_id, amount, hold_id, request_id, task_id, owner, created_at)
SELECT 'hold', account_id, amount, id, id, task_id, owner, submitted_at FROM holds ORDER BY id;
INSERT INTO book (kind, account_id, amount, log_id, note, created_at)
SELECT 'carry', account_id, balance, (SELECT coalesce(max(id), 0) FROM logs), 'the balance when the books began',
       (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint
FROM wallets ORDER BY account_id;
