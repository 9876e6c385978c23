-- What the scan knows about each source file: the file's stat signature (size, modification and change time in
-- nanoseconds, inode, device) when its bytes had this SHA-256. A later scan that sees the same signature knows
-- the hash without reading the file; any write to the file changes its change time (ctime), which no tool can
-- set back, so a changed file is always read and hashed again. `cpe run --rehash` ignores these rows.
CREATE TABLE source_files (
  path_hash     TEXT NOT NULL PRIMARY KEY,
  path          TEXT NOT NULL,
  stat_key      TEXT NOT NULL,
  content_hash  TEXT NOT NULL,
  checked_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);
