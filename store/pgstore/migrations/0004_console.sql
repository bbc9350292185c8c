-- The console (store.Users, store.Sessions): the people who sign in, the
-- invitations that let people join an account, sessions and failed
-- sign-ins. Users, invitations and sessions are JSON records beside the
-- columns lookups and lists use; a session row is keyed by the SHA-256 of
-- its token, so every instance sees every session. A key names the console
-- user it belongs to ('' for the operator's keys).

ALTER TABLE api_keys ADD COLUMN user_id text NOT NULL DEFAULT '';

CREATE TABLE users (
    id         text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    email      text COLLATE "C" NOT NULL UNIQUE,
    created_at bigint NOT NULL,
    "user"     json NOT NULL
);
CREATE INDEX users_account ON users (account_id, created_at, id);

CREATE TABLE invitations (
    id         text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    invitation json NOT NULL
);
CREATE INDEX invitations_account ON invitations (account_id, created_at, id);

CREATE TABLE sessions (
    id         text COLLATE "C" PRIMARY KEY,
    user_id    text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    session    json NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id, created_at, id);
CREATE INDEX sessions_expiry ON sessions (expires_at);

-- Failed sign-ins per subject (an address, an account) in a fixed window.
CREATE TABLE signin_failures (
    subject text PRIMARY KEY,
    n       integer NOT NULL,
    since   bigint NOT NULL
);
