-- Source paths compare byte for byte (see the MariaDB migration of the same number): SQLite's `=` does so
-- already (BINARY), so nothing changes here.
SELECT 1;
