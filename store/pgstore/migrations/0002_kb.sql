-- Knowledge bases (store.KnowledgeBases). A page is its JSON (the page as
-- imported, with its version and time) beside the columns lookups use;
-- tags, names (a page's id, title and aliases) and links are folded
-- (lower case, runs of spaces as one) in rows of their own, so links
-- resolve when read: a link names a page of its base by id, else title,
-- else alias (rank), the smallest page id first among equals.
--
-- Every page write is a numbered change. kb_seq holds the last number; a
-- write locks its row for its whole transaction, so writes commit in number
-- order and a follower never sees a number appear below one it has read.
-- kb_changes keeps each page's latest change, deletions included.

CREATE TABLE kb_bases (
    id         text COLLATE "C" PRIMARY KEY,
    name       text NOT NULL,
    readers    text[] NOT NULL,
    page_count integer NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);

CREATE TABLE kb_pages (
    id      text COLLATE "C" PRIMARY KEY,
    kb_id   text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    page    json NOT NULL
);
CREATE INDEX kb_pages_kb ON kb_pages (kb_id, id);

CREATE TABLE kb_tags (
    kb_id   text COLLATE "C" NOT NULL,
    tag_f   text COLLATE "C" NOT NULL,
    page_id text COLLATE "C" NOT NULL,
    tag     text NOT NULL, -- as the page writes it
    PRIMARY KEY (kb_id, tag_f, page_id)
);
CREATE INDEX kb_tags_page ON kb_tags (page_id);

CREATE TABLE kb_names (
    kb_id   text COLLATE "C" NOT NULL,
    name_f  text COLLATE "C" NOT NULL,
    rank    smallint NOT NULL, -- 0 id, 1 title, 2 alias
    page_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (kb_id, name_f, rank, page_id)
);
CREATE INDEX kb_names_page ON kb_names (page_id);

CREATE TABLE kb_links (
    kb_id    text COLLATE "C" NOT NULL,
    target_f text COLLATE "C" NOT NULL,
    page_id  text COLLATE "C" NOT NULL,
    PRIMARY KEY (kb_id, target_f, page_id)
);
CREATE INDEX kb_links_page ON kb_links (page_id);

CREATE TABLE kb_changes (
    seq     bigint PRIMARY KEY,
    page_id text COLLATE "C" NOT NULL UNIQUE,
    kb_id   text COLLATE "C" NOT NULL,
    deleted boolean NOT NULL
);

CREATE TABLE kb_seq (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq bigint NOT NULL
);
INSERT INTO kb_seq (seq) VALUES (0);

CREATE TABLE kb_sources (
    kb_id  text COLLATE "C" NOT NULL,
    key    text COLLATE "C" NOT NULL,
    source json NOT NULL,
    PRIMARY KEY (kb_id, key)
);
