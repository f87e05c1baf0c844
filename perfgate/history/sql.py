"""Every statement the history stores run: the schema's migrations and the queries, in one
place. Plain SQL types (TEXT, INTEGER, DOUBLE PRECISION) and standard statements only, so a
PostgreSQL store can run the same text (placeholders aside: `?` here, a driver's `%s` there;
`placeholders()` turns one into the other). Nothing of SQLite's own is in the schema: its
connection settings (WAL, the busy timeout) are the store's, not the schema's."""

from __future__ import annotations

# The table that says which migrations a database holds; created before any migration.
MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS perfgate_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
)"""

# Migration N is MIGRATIONS[N - 1]: (name, statements). A migration once released is never
# edited: a change of schema is a new migration appended here.
MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "runs, results, kernels and metrics",
        (
            """CREATE TABLE runs (
                run_id TEXT PRIMARY KEY,
                digest TEXT NOT NULL,
                recorded_at TEXT NOT NULL,
                commit_sha TEXT,
                branch TEXT,
                pull_request TEXT,
                ci_job TEXT,
                status TEXT NOT NULL,
                exit_code INTEGER NOT NULL,
                perfgate_version TEXT NOT NULL
            )""",
            """CREATE TABLE results (
                run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
                result_index INTEGER NOT NULL,
                baseline TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                gpu TEXT,
                cc TEXT,
                ncu TEXT,
                driver TEXT,
                clock_control TEXT,
                cache_control TEXT,
                scope TEXT,
                time_basis TEXT,
                PRIMARY KEY (run_id, result_index)
            )""",
            """CREATE TABLE kernels (
                run_id TEXT NOT NULL,
                result_index INTEGER NOT NULL,
                kernel_index INTEGER NOT NULL,
                kernel TEXT NOT NULL,
                name TEXT NOT NULL,
                state TEXT NOT NULL,
                family TEXT,
                nvtx TEXT,
                matched_by TEXT NOT NULL,
                PRIMARY KEY (run_id, result_index, kernel_index),
                FOREIGN KEY (run_id, result_index)
                    REFERENCES results (run_id, result_index) ON DELETE CASCADE
            )""",
            """CREATE TABLE metrics (
                run_id TEXT NOT NULL,
                result_index INTEGER NOT NULL,
                kernel_index INTEGER NOT NULL,
                metric_index INTEGER NOT NULL,
                metric TEXT NOT NULL,
                state TEXT NOT NULL,
                value_number DOUBLE PRECISION,
                value_text TEXT,
                baseline_number DOUBLE PRECISION,
                baseline_text TEXT,
                unit TEXT NOT NULL,
                bound TEXT NOT NULL,
                PRIMARY KEY (run_id, result_index, kernel_index, metric_index),
                FOREIGN KEY (run_id, result_index, kernel_index)
                    REFERENCES kernels (run_id, result_index, kernel_index) ON DELETE CASCADE
            )""",
            "CREATE INDEX runs_by_time ON runs (recorded_at)",
            "CREATE INDEX results_by_fingerprint ON results (fingerprint)",
            "CREATE INDEX kernels_by_id ON kernels (kernel)",
        ),
    ),
    (
        "kernels' first finding",
        (
            # Nullable: a kernel that passed has none, and so has every run kept before.
            "ALTER TABLE kernels ADD COLUMN finding_mechanism TEXT",
            "ALTER TABLE kernels ADD COLUMN finding_title TEXT",
            "ALTER TABLE kernels ADD COLUMN finding_lever TEXT",
        ),
    ),
    (
        "a kernel's series in one range of an index",
        (
            # One kernel's metric over N runs was N index descents (kernels, then each run's
            # metrics through the primary key) and N random pages of the tables: 168 ms for
            # 4,223 runs in SQLite, 388 ms in PostgreSQL (benchmarks/history_scale.py,
            # docs/history.md "Scale"). With the kernel's id on its metrics, the two indexes
            # below hold a series and its kernel's runs whole (every column the reads take),
            # each in one range: a series reads a few hundred pages, in order.
            "ALTER TABLE metrics ADD COLUMN kernel TEXT",
            """UPDATE metrics SET kernel = (SELECT k.kernel FROM kernels k
                WHERE k.run_id = metrics.run_id AND k.result_index = metrics.result_index
                    AND k.kernel_index = metrics.kernel_index)""",
            """CREATE INDEX metrics_by_series ON metrics (kernel, metric, run_id, result_index,
                kernel_index, state, value_number, value_text, baseline_number, unit, bound)""",
            """CREATE INDEX kernels_by_series ON kernels (kernel, run_id, result_index,
                kernel_index, name, finding_mechanism, finding_title)""",
        ),
    ),
    (
        "a kernel's runs without a join",
        (
            # Version 3 read a kernel's runs joined to `runs` and `results` for their time,
            # commit, branch and fingerprint: PostgreSQL hashed both whole tables per read, a
            # cost that grows with every run kept rather than with the series read. Each
            # kernel row keeps its run's four (a few hundred bytes a kernel, against a run's
            # ~2,400 metric rows), so kernels_by_series gives them from one range
            # (docs/history.md "Scale"). The kernel's name leaves
            # the index: a demangled template's can pass the 2,704 bytes a PostgreSQL index
            # entry may hold, and a series needs it from its newest run only.
            "ALTER TABLE kernels ADD COLUMN recorded_at TEXT",
            "ALTER TABLE kernels ADD COLUMN commit_sha TEXT",
            "ALTER TABLE kernels ADD COLUMN branch TEXT",
            "ALTER TABLE kernels ADD COLUMN fingerprint TEXT",
            """UPDATE kernels SET
                recorded_at = (SELECT r.recorded_at FROM runs r WHERE r.run_id = kernels.run_id),
                commit_sha = (SELECT r.commit_sha FROM runs r WHERE r.run_id = kernels.run_id),
                branch = (SELECT r.branch FROM runs r WHERE r.run_id = kernels.run_id),
                fingerprint = (SELECT s.fingerprint FROM results s
                    WHERE s.run_id = kernels.run_id AND s.result_index = kernels.result_index)""",
            "DROP INDEX kernels_by_series",
            """CREATE INDEX kernels_by_series ON kernels (kernel, run_id, result_index,
                kernel_index, recorded_at, commit_sha, branch, fingerprint, finding_mechanism,
                finding_title)""",
        ),
    ),
    (
        "the machine start of each result",
        (
            # Nullable: unknown where a capture had no sidecar, where the captures came from
            # several starts, and on every run kept before. Copied onto the kernels and into
            # kernels_by_series for the same reason as migration 4's columns: a run is held to
            # its own start's earlier runs (perfgate.history.detect) from the series' range.
            "ALTER TABLE results ADD COLUMN machine_start TEXT",
            "ALTER TABLE kernels ADD COLUMN machine_start TEXT",
            "DROP INDEX kernels_by_series",
            """CREATE INDEX kernels_by_series ON kernels (kernel, run_id, result_index,
                kernel_index, recorded_at, commit_sha, branch, fingerprint, finding_mechanism,
                finding_title, machine_start)""",
        ),
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)

TABLES = ("runs", "results", "kernels", "metrics")

CURRENT_VERSION = "SELECT MAX(version) FROM perfgate_migrations"
RECORD_MIGRATION = "INSERT INTO perfgate_migrations (version, name, applied_at) VALUES (?, ?, ?)"

RUN_DIGEST = "SELECT digest FROM runs WHERE run_id = ?"
# A run's row goes in first, and only if its id is new (rowcount 0: kept already): the
# stores' idempotence (sqlstore.py). ON CONFLICT is SQLite's (3.24) and PostgreSQL's alike.
INSERT_RUN = """INSERT INTO runs (run_id, digest, recorded_at, commit_sha, branch, pull_request,
    ci_job, status, exit_code, perfgate_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (run_id) DO NOTHING"""
# A run's rows below it, by table: their columns, in the order the stores give the values
# (sqlstore.child_rows). SQLite inserts them with executemany; PostgreSQL copies them in
# (COPY ... FROM STDIN, a statement of its own: twice executemany's rate there).
CHILD_COLUMNS: dict[str, tuple[str, ...]] = {
    "results": (
        "run_id", "result_index", "baseline", "fingerprint", "gpu", "cc", "ncu", "driver",
        "clock_control", "cache_control", "scope", "time_basis", "machine_start",
    ),
    "kernels": (
        "run_id", "result_index", "kernel_index", "kernel", "name", "state", "family", "nvtx",
        "matched_by", "finding_mechanism", "finding_title", "finding_lever", "recorded_at",
        "commit_sha", "branch", "fingerprint", "machine_start",
    ),
    "metrics": (
        "run_id", "result_index", "kernel_index", "metric_index", "metric", "state",
        "value_number", "value_text", "baseline_number", "baseline_text", "unit", "bound",
        "kernel",
    ),
}  # fmt: skip


def insert(table: str) -> str:
    """The INSERT of one row of a run's table (CHILD_COLUMNS)."""
    columns = CHILD_COLUMNS[table]
    marks = ", ".join("?" * len(columns))
    # Names from CHILD_COLUMNS only, never from input; the values go as parameters.
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"  # noqa: S608


def copy_in(table: str) -> str:
    """PostgreSQL's COPY of a run's rows of one table (CHILD_COLUMNS)."""
    return f"COPY {table} ({', '.join(CHILD_COLUMNS[table])}) FROM STDIN"


INSERT_RESULT = insert("results")
INSERT_KERNEL = insert("kernels")
INSERT_METRIC = insert("metrics")

SELECT_RUN = """SELECT run_id, recorded_at, commit_sha, branch, pull_request, ci_job, status,
    exit_code, perfgate_version FROM runs WHERE run_id = ?"""
SELECT_RESULTS = """SELECT result_index, baseline, machine_start, gpu, cc, ncu, driver,
    clock_control, cache_control, scope, time_basis FROM results WHERE run_id = ?
    ORDER BY result_index"""
SELECT_KERNELS = """SELECT result_index, kernel_index, kernel, name, state, family, nvtx,
    matched_by, finding_mechanism, finding_title, finding_lever FROM kernels WHERE run_id = ?
    ORDER BY result_index, kernel_index"""
SELECT_METRICS = """SELECT result_index, kernel_index, metric, state, value_number, value_text,
    baseline_number, baseline_text, unit, bound FROM metrics WHERE run_id = ?
    ORDER BY result_index, kernel_index, metric_index"""
RUN_IDS = "SELECT run_id FROM runs ORDER BY recorded_at, run_id"
# The baselines the runs checked, and the runs that checked one, oldest first: what a page of
# one baseline's newest N runs reads before loading only those N (trends.page_trends).
BASELINES = "SELECT DISTINCT baseline FROM results"
RUN_IDS_OF_BASELINE = """SELECT run_id FROM runs WHERE run_id IN
    (SELECT run_id FROM results WHERE baseline = ?) ORDER BY recorded_at, run_id"""

# A kernel's series, from two indexes (migrations 3 and 4): kernels_by_series holds the
# kernel in each run it was checked in, with the run's time, commit, branch and fingerprint
# (its key: the same for thousands of points; queries.series reads its fields once), and
# metrics_by_series its metrics' points. Both are ordered by run within a kernel (and metric),
# so one metric's series is one range of each, joined in that order (PostgreSQL: a merge join;
# SQLite: a seek of the points' index per run, every column in the index): one statement and
# no pairing in Python (docs/history.md "Scale"). Every metric of a kernel is not one
# range of metrics_by_series (the metric comes before the run): the two ranges are read apart
# and paired by sqlstore.series_rows. The rows come in SERIES_COLUMNS' order either way. (No
# `? IS NULL` for an optional filter: PostgreSQL cannot type such a parameter.)
SERIES_COLUMNS = (
    "run_id", "recorded_at", "commit_sha", "branch", "fingerprint", "result_index",
    "kernel_index", "metric", "state", "value_number", "value_text", "baseline_number", "unit",
    "bound", "finding_mechanism", "finding_title", "machine_start",
)  # fmt: skip
SERIES_OF_METRIC = """SELECT k.run_id, k.recorded_at, k.commit_sha, k.branch, k.fingerprint,
    k.result_index, k.kernel_index, m.metric, m.state, m.value_number, m.value_text,
    m.baseline_number, m.unit, m.bound, k.finding_mechanism, k.finding_title, k.machine_start
    FROM kernels k JOIN metrics m ON m.kernel = k.kernel AND m.metric = ?
        AND m.run_id = k.run_id AND m.result_index = k.result_index
        AND m.kernel_index = k.kernel_index
    WHERE k.kernel = ?"""
SERIES_KERNELS = """SELECT run_id, result_index, kernel_index, recorded_at, commit_sha, branch,
    fingerprint, finding_mechanism, finding_title, machine_start FROM kernels WHERE kernel = ?"""
SERIES_POINTS = """SELECT run_id, result_index, kernel_index, metric, state, value_number,
    value_text, baseline_number, unit, bound FROM metrics WHERE kernel = ?"""
# The kernel's name in one run (a series is named as its newest run names the kernel).
KERNEL_NAME = """SELECT name FROM kernels
    WHERE run_id = ? AND result_index = ? AND kernel_index = ?"""

# Retention. The child rows go first: a store need not rely on ON DELETE CASCADE, which
# SQLite honours only with its foreign_keys setting on.
OLD_RUNS = "SELECT run_id FROM runs WHERE recorded_at < ?"
KEPT_NEWEST = "SELECT run_id FROM runs ORDER BY recorded_at DESC, run_id DESC"
DELETE_RUN = (
    "DELETE FROM metrics WHERE run_id = ?",
    "DELETE FROM kernels WHERE run_id = ?",
    "DELETE FROM results WHERE run_id = ?",
    "DELETE FROM runs WHERE run_id = ?",
)


def placeholders(statement: str, marker: str) -> str:
    """The statement with each `?` as `marker` (a PostgreSQL driver's `%s`): the statements
    above hold no `?` but their placeholders."""
    return statement.replace("?", marker)
