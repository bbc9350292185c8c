-- Media families: a task belongs to the collection of its id's prefix
-- (vid_, mus_...), which one route polls and lists whatever the task's
-- family; a succeeded task whose result passes its retention becomes
-- expired at expire_at (Unix nanoseconds, 0 for never).
ALTER TABLE tasks ADD COLUMN collection text NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN expire_at bigint NOT NULL DEFAULT 0;
UPDATE tasks SET collection = coalesce(substring(id from '^[^_]+_'), '');
CREATE INDEX tasks_collection ON tasks (account_id, collection, submitted_at, id);
CREATE INDEX tasks_expiring ON tasks (expire_at) WHERE status = 'succeeded' AND expire_at > 0;
