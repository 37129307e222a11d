"""One engine's measurements for bench.py, in a process of its own (each engine runs in the
Python that has it: datafusion 55 and icefloe, datafusion 53 and pyiceberg-core, PyIceberg,
DuckDB with its iceberg extension).

    python worker.py ENGINE QUERY METADATA_JSON DATA_DIR REPEAT

prints one JSON object: `cold_ms` (the first run in this fresh process: opening the table,
planning and executing), `warm_ms` and `plan_ms` (medians of REPEAT later runs, each in a fresh
session over a freshly opened table, with whatever the engine caches per process) and `answer`
(what the query returned, which bench.py compares across engines).
"""

import decimal
import json
import statistics
import sys
import time

# The probe: commit 1,234 of the 2,000-commit table (bench.py writes commit i's 50 rows with
# ids 50 i .. 50 i + 49, all on day 2024-01-01 + i).
PROBE_DAY = "2027-05-19"  # 2024-01-01 + 1234 days
NEXT_DAY = "2027-05-20"
PROBE_ID = 1234 * 50 + 7

QUERIES = {
    "count": "SELECT count(*) AS c FROM {t}",
    "one_day": (
        "SELECT count(*) AS c, sum(id) AS s FROM {t} "
        f"WHERE ts >= '{PROBE_DAY}T00:00:00+00:00' AND ts < '{NEXT_DAY}T00:00:00+00:00'"
    ),
    "metrics_only": f"SELECT count(*) AS c, sum(id) AS s FROM {{t}} WHERE id = {PROBE_ID}",
    "full_scan": "SELECT k, sum(v) AS s, count(*) AS c FROM {t} GROUP BY k",
}

# PyIceberg's row filters for the same queries (it has no SQL).
ROW_FILTERS = {
    "count": None,
    "one_day": f"ts >= '{PROBE_DAY}T00:00:00+00:00' and ts < '{NEXT_DAY}T00:00:00+00:00'",
    "metrics_only": f"id = {PROBE_ID}",
    "full_scan": None,
}


def answer_of(table):
    """A query's answer as plain values: (count, sum) for the probes, and for the grouped
    scan the number of groups, the row count and the total of the sums."""
    columns = {name: [plain(v) for v in values] for name, values in table.to_pydict().items()}
    if "k" in columns:
        return [len(columns["k"]), sum(columns["c"]), round(sum(columns["s"]), 3)]
    return [columns[name][0] for name in ("c", "s") if name in columns]


def plain(value):
    """DuckDB's HUGEINT sums arrive as decimals."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def measure(run, plan, repeat):
    start = time.perf_counter()
    answer = run()
    cold = (time.perf_counter() - start) * 1000
    warm, planned = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        again = run()
        warm.append((time.perf_counter() - start) * 1000)
        if again != answer:
            raise SystemExit(f"the answer changed between runs: {answer} then {again}")
        if plan is not None:
            start = time.perf_counter()
            plan()
            planned.append((time.perf_counter() - start) * 1000)
    return {
        "cold_ms": cold,
        "warm_ms": statistics.median(warm),
        "plan_ms": statistics.median(planned) if planned else None,
        "answer": answer,
    }


def datafusion_engine(register, query, repeat):
    """datafusion-python with the table registered by `register(ctx)`."""
    import datafusion
    import pyarrow as pa

    sql = QUERIES[query].format(t="t")

    def session():
        ctx = datafusion.SessionContext()
        register(ctx)
        return ctx

    # The session must outlive the query: the FFI holds it weakly (datafusion-python's rule).
    def run():
        ctx = session()
        return answer_of(pa.Table.from_batches(ctx.sql(sql).collect()))

    def plan():
        ctx = session()
        ctx.sql(sql).execution_plan()

    return measure(run, plan, repeat)


def icefloe_engine(metadata, data, query, repeat):
    import icefloe

    return datafusion_engine(
        lambda ctx: ctx.register_table("t", icefloe.Table.open(metadata)), query, repeat
    )


def pyiceberg_core_engine(metadata, data, query, repeat):
    from pyiceberg.table import StaticTable

    return datafusion_engine(
        lambda ctx: ctx.register_table("t", StaticTable.from_metadata(metadata)), query, repeat
    )


def plain_datafusion_engine(metadata, data, query, repeat):
    """datafusion-python reading the table's Parquet files as a directory: no Iceberg, no
    partition or metrics pruning, no deletes; the floor a full scan can reach."""
    return datafusion_engine(lambda ctx: ctx.register_parquet("t", data), query, repeat)


def pyiceberg_engine(metadata, data, query, repeat):
    import pyarrow.compute as pc
    from pyiceberg.table import StaticTable

    row_filter = ROW_FILTERS[query]

    def scan():
        table = StaticTable.from_metadata(metadata)
        return table.scan(row_filter=row_filter) if row_filter else table.scan()

    def run():
        rows = scan().to_arrow()
        if query == "full_scan":
            grouped = rows.group_by("k").aggregate([("v", "sum"), ("v", "count")])
            return answer_of(grouped.rename_columns(["k", "s", "c"]))
        if query == "count":
            return [rows.num_rows]
        return [rows.num_rows, pc.sum(rows["id"]).as_py()]

    def plan():
        list(scan().plan_files())

    return measure(run, plan, repeat)


def duckdb_engine(metadata, data, query, repeat):
    import glob
    import importlib

    import duckdb

    con = duckdb.connect()
    for name in ("duckdb_extension_avro", "duckdb_extension_iceberg"):
        package = importlib.import_module(name).__path__[0]
        (path,) = glob.glob(f"{package}/extensions/*/*.duckdb_extension")
        con.execute(f"LOAD '{path}'")
    sql = QUERIES[query].format(t=f"iceberg_scan('{metadata}')")

    def run():
        return answer_of(con.execute(sql).fetch_arrow_table())

    def plan():
        con.execute("EXPLAIN " + sql).fetchall()

    return measure(run, plan, repeat)


ENGINES = {
    "icefloe": icefloe_engine,
    "pyiceberg-core": pyiceberg_core_engine,
    "plain-datafusion": plain_datafusion_engine,
    "pyiceberg": pyiceberg_engine,
    "duckdb": duckdb_engine,
}


def version(engine):
    names = {
        "icefloe": ["icefloe", "datafusion"],
        "pyiceberg-core": ["pyiceberg_core", "datafusion"],
        "plain-datafusion": ["datafusion"],
        "pyiceberg": ["pyiceberg", "pyarrow"],
        "duckdb": ["duckdb"],
    }[engine]
    from importlib.metadata import version as of

    return " ".join(f"{n} {of(n.replace('_', '-'))}" for n in names)


if __name__ == "__main__":
    engine, query, metadata, data, repeat = sys.argv[1:]
    result = ENGINES[engine](metadata, data, query, int(repeat))
    result["version"] = version(engine)
    print(json.dumps(result))
