-- Organizations' agents (store.Agents): an agent, a key request and an
-- organization policy are JSON records beside the columns lists order and
-- select on. An agent key is an api_keys row of kind agent naming its agent,
-- with its spend cap (NULL: none), which PlaceHold enforces.

ALTER TABLE api_keys ADD COLUMN agent_id text NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN spend_cap bigint;

CREATE TABLE agents (
    id         text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    deleted    boolean NOT NULL,
    agent      json NOT NULL
);
CREATE INDEX agents_account ON agents (account_id, created_at, id);

CREATE TABLE key_requests (
    id         text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    status     text NOT NULL,
    request    json NOT NULL
);
CREATE INDEX key_requests_account ON key_requests (account_id, created_at, id);

CREATE TABLE organizations (
    account_id text PRIMARY KEY,
    policy     json NOT NULL
);

-- A capped hold sums the key's open holds.
CREATE INDEX holds_key ON holds (key_id);
