-- What the scan knows about each source file: the file's stat signature (size, modification and change time in
-- nanoseconds, inode, device) when its bytes had this SHA-256. A later scan that sees the same signature knows
-- the hash without reading the file; any write to the file changes its change time (ctime), which no tool can
-- set back, so a changed file is always read and hashed again. `cpe run --rehash` ignores these rows.
CREATE TABLE source_files (
  path_hash     CHAR(64) NOT NULL PRIMARY KEY,
  path          VARCHAR(1024) NOT NULL,
  stat_key      VARCHAR(200) NOT NULL,
  content_hash  CHAR(64) NOT NULL,
  checked_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
