-- Source paths of any length (see the MariaDB migration of the same number): SQLite does not hold a VARCHAR to
-- its length, so nothing changes here.
SELECT 1;
