"""DuckDB's figures for the statements of benches/dml.rs, on the same rows.

    python benches/peers/duckdb_dml.py WAREHOUSE [RUNS]

WAREHOUSE is the directory `cargo bench --bench dml` keeps when ICEFLOE_DML_BENCH_KEEP is set
(it prints it, and lists the table's original data files in cow_files.txt and the MERGE
source's in source_files.txt). DuckDB loads those Parquet files into native tables, then times
each statement
RUNS times (default 5) on a fresh copy of that table: its DELETE of 1% of rows spread over 10
files, its DELETE of a partition, and its MERGE of the same 100,000 source rows. DuckDB's
iceberg extension cannot DELETE or MERGE a table opened from a metadata file (only through an
attached REST catalog), so these are DuckDB's native-table figures: a peer's cost of the same
change, not of the same Iceberg commit.
"""

import statistics
import sys
import time

import duckdb

# The statements of benches/dml.rs, on the table `{t}` (shared with duckdb_iceberg_dml.py).
STATEMENTS = {
    "delete 1% over 10 files": "DELETE FROM {t} WHERE f < 10 AND id % 10 = 0",
    "delete a partition": "DELETE FROM {t} WHERE part = 3",
    "merge 100,000 rows": (
        "MERGE INTO {t} USING source s ON {t}.id = s.id "
        "WHEN MATCHED THEN UPDATE SET value = s.value "
        "WHEN NOT MATCHED THEN INSERT (id, part, f, value, tag) VALUES (s.id, 0, -1, s.value, 'new')"
    ),
}


def timed(con, statement):
    started = time.perf_counter()
    con.execute(statement)
    return time.perf_counter() - started


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    warehouse = argv[1]
    runs = int(argv[2]) if len(argv) > 2 else 5
    con = duckdb.connect()
    def files(name):
        with open(f"{warehouse}/{name}_files.txt") as f:
            return [line.strip() for line in f if line.strip()]

    con.execute("CREATE TABLE base AS SELECT * FROM read_parquet(?)", [files("cow")])
    total = con.execute("SELECT count(*) FROM base").fetchone()[0]
    con.execute("CREATE TABLE source AS SELECT * FROM read_parquet(?)", [files("source")])
    print(f"duckdb {duckdb.__version__}: {total} rows")
    for name, statement in STATEMENTS.items():
        times = []
        for _ in range(runs):
            con.execute("DROP TABLE IF EXISTS t")
            con.execute("CREATE TABLE t AS SELECT * FROM base")
            times.append(timed(con, statement.format(t="t")))
        print(f"{name}: median {statistics.median(times) * 1000:.1f} ms "
              f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}, {runs} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
