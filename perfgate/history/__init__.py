"""The history of checks: every run kept on a database (docs/history.md).

A check's result becomes an immutable run record (records.py, from a `CheckResult` or from the
JSON report `perfgate check --format json` wrote), kept by a store (store.py: SQLite, the SQL
in sql.py) and read back as a kernel's series per fingerprint (queries.py, render.py). It sits
above verdicts, beside reports and ncu: no formatter imports it, and it imports none."""
