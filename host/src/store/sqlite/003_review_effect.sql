-- Scout Connector Host, SQLite schema version 3: a remote MCP server's
-- tool is reviewed with the effect an operator gives it (read, write,
-- billed); a component's tool keeps NULL (its WIT says its effect).
ALTER TABLE tool_reviews ADD COLUMN effect TEXT;
