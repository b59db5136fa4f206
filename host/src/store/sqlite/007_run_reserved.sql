-- Scout Connector Host, SQLite schema version 7: what a run holds for
-- calls not yet settled is kept with the run, so every holder of its
-- session sees it.
ALTER TABLE runs ADD COLUMN reserved INTEGER NOT NULL DEFAULT 0;
