-- Card top-ups (store.Orders). An order is a JSON record beside the
-- columns its lookups and lists use; version is the compare-and-set of
-- its updates, each one statement with the credit or debit it makes.
-- A ledger entry names the order that caused it ('' for the others).

CREATE TABLE orders (
    id         text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    status     text NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    payment_id text COLLATE "C" NOT NULL,
    version    bigint NOT NULL,
    created_at bigint NOT NULL,
    "order"    json NOT NULL
);
CREATE INDEX orders_account ON orders (account_id, created_at, id);
CREATE INDEX orders_created ON orders (created_at, id);
CREATE INDEX orders_session ON orders (session_id);
CREATE INDEX orders_payment ON orders (payment_id);

ALTER TABLE ledger ADD COLUMN order_id text NOT NULL DEFAULT '';
