-- A call served while its instance was cut from the database for longer
-- than its lease may find its hold released by another instance's sweep
-- (an entry of kind settle noted 'lease lapsed'). Its instance then
-- charges it late: an entry of kind late, at most one per hold.
CREATE INDEX book_lapsed ON book (hold_id) WHERE note = 'lease lapsed';
CREATE UNIQUE INDEX book_late_once ON book (hold_id) WHERE kind = 'late';
