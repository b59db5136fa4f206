-- Scout Connector Host, SQLite schema version 5: a tool's review keeps
-- what it covered (the component's digest, the tool's effect, routes,
-- gate, grantability and the component's imports, JSON), so a new version
-- of the component shows what changed.
ALTER TABLE tool_reviews ADD COLUMN facts TEXT;
