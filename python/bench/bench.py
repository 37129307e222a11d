"""Side by side, in one run: icefloe in datafusion-python against the other ways a Python user
reads an Iceberg table (issue 21).

    python python/bench/bench.py [--work DIR] [--repeat N] [--rows N]

Run with the Python that has icefloe and datafusion 55 (.ci/run's py-venv). The peers run in
their own Pythons, each query in a fresh process (worker.py):

- `pyiceberg-core`: PyIceberg's own DataFusion integration (`pyiceberg[datafusion,
  pyiceberg-core]` 0.12: datafusion 53 and pyiceberg-core 0.10, the newest pair that works
  together; no release of either supports datafusion 55), from `--core-python`
  (default: ~/.cache/icefloe/bench-core-venv: `python -m venv` it and `pip install -r
  python/bench/peers-requirements.txt`);
- `pyiceberg`: PyIceberg's `scan().to_arrow()` (then pyarrow for the aggregate), in this Python;
- `duckdb`: DuckDB's iceberg extension (`iceberg_scan` of the metadata file), from
  `--duckdb-python` (default: $ICEFLOE_PYTHON, which has duckdb and its extensions);
- `plain-datafusion`: datafusion-python 55 over the table's Parquet files as a plain directory
  (no Iceberg, no pruning): the floor a full scan can reach.

Tables, written once by icefloe into `--work` (a SQLite catalog; kept between runs):

- `db.commits`: 2,000 one-file append commits of 50 rows (ids 50 i .. 50 i + 49, category,
  `ts` on day 2024-01-01 + i), partitioned by `day(ts)`: the current snapshot has 2,000
  manifests. Queries: `count(*)`, one day (partition pruning), `id = ...` (metrics pruning only);
- `db.big`: `--rows` rows (default 10 million) of `(id, k = id % 1000, v)`; query: a grouped
  aggregate over every row.

Each engine's answers must be the same (the run stops otherwise). Reported per query and
engine: `cold` (the first run in a fresh process: open the table, plan, execute), `warm` (median
of `--repeat` later runs, each in a fresh session on a freshly opened table, with the engine's
per-process caches) and `plan` (median, planning alone: `execution_plan()`, PyIceberg's
`plan_files()`, DuckDB's EXPLAIN), with each as a ratio to icefloe's.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMITS = 2_000
ROWS_PER_COMMIT = 50
FIRST_DAY_MICROS = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z
MICROS_PER_DAY = 86_400_000_000
PROBES = ["count", "one_day", "metrics_only"]


def build_tables(work, rows, commits):
    """The two tables, written by icefloe through datafusion-python (once)."""
    import datafusion

    import icefloe

    db = work / "bench.db"
    done = work / f"tables-{commits}-{rows}.done"
    if done.exists():
        return
    if work.exists():
        for path in sorted(work.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
    work.mkdir(parents=True, exist_ok=True)
    # Locations as URIs (`file:///...`): iceberg-rust (pyiceberg-core) reads no bare paths.
    catalog = icefloe.Catalog.create(
        str(db), name="bench", properties={"warehouse": f"file://{work.resolve()}"}
    )
    catalog.sql("CREATE SCHEMA db")
    catalog.sql(
        "CREATE TABLE db.commits (id BIGINT NOT NULL, category VARCHAR, "
        "ts TIMESTAMP WITH TIME ZONE) PARTITION BY (day(ts))"
    )
    catalog.sql("CREATE TABLE db.big (id BIGINT NOT NULL, k BIGINT, v DOUBLE)")
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("ice", catalog)
    start = time.perf_counter()
    for i in range(commits):
        day = FIRST_DAY_MICROS + i * MICROS_PER_DAY
        ctx.sql(
            f"INSERT INTO ice.db.commits SELECT {i * ROWS_PER_COMMIT} + value, "
            "CASE value % 5 WHEN 0 THEN 'alpha' WHEN 1 THEN 'beta' WHEN 2 THEN 'gamma' "
            "WHEN 3 THEN 'delta' ELSE 'epsilon' END, "
            f"to_timestamp_micros({day} + value * 1000000) FROM range({ROWS_PER_COMMIT})"
        ).collect()
    print(f"db.commits: {commits} commits in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    ctx.sql(
        "INSERT INTO ice.db.big SELECT value, value % 1000, "
        f"CAST(value % 7919 AS DOUBLE) * 0.5 FROM range({rows})"
    ).collect()
    print(f"db.big: {rows} rows in {time.perf_counter() - start:.1f} s", flush=True)
    done.touch()


def metadata_location(work, table):
    """The table's current metadata file, as the SQL catalog records it."""
    import sqlite3

    with sqlite3.connect(work / "bench.db") as db:
        (location,) = db.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'db' "
            "AND table_name = ?",
            (table,),
        ).fetchone()
    return location


def run_worker(python, engine, query, metadata, data, repeat):
    command = [python, str(HERE / "worker.py"), engine, query, metadata, data, str(repeat)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache/icefloe/pybench")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", type=int, default=10_000_000)
    # Fewer commits only to try the script out: the probes look for commit 1,234.
    parser.add_argument("--commits", type=int, default=COMMITS)
    parser.add_argument(
        "--core-python",
        default=str(Path.home() / ".cache/icefloe/bench-core-venv/bin/python"),
    )
    parser.add_argument("--duckdb-python", default=os.environ.get("ICEFLOE_PYTHON", ""))
    args = parser.parse_args()

    build_tables(args.work, args.rows, args.commits)
    tables = {
        name: (metadata_location(args.work, name), str(args.work / "db" / name / "data"))
        for name in ("commits", "big")
    }
    engines = {
        "icefloe": sys.executable,
        "pyiceberg-core": args.core_python,
        "pyiceberg": sys.executable,
        "duckdb": args.duckdb_python,
        "plain-datafusion": sys.executable,
    }
    results = {}
    for query in PROBES + ["full_scan"]:
        metadata, data = tables["big" if query == "full_scan" else "commits"]
        for engine, python in engines.items():
            if not python or not Path(python).exists():
                results[(query, engine)] = {"error": "no Python for it (see --help)"}
                continue
            results[(query, engine)] = run_worker(
                python, engine, query, metadata, data, args.repeat
            )
    report(results, engines)
    out = args.work / "results.json"
    out.write_text(json.dumps({f"{q} {e}": r for (q, e), r in results.items()}, indent=1))
    print(f"\n(raw results: {out})")


def report(results, engines):
    print()
    for (query, engine), result in results.items():
        if "version" in result and query == "count":
            print(f"{engine}: {result['version']}")
    for query in PROBES + ["full_scan"]:
        base = results[(query, "icefloe")]
        answers = {
            e: r["answer"] for (q, e), r in results.items() if q == query and "answer" in r
        }
        agreed = len({json.dumps(a) for a in answers.values()}) == 1
        print(f"\n{query}: answer {base.get('answer')}" + ("" if agreed else f"  DIFFER: {answers}"))
        print(f"  {'engine':<17}{'cold ms':>16}{'warm ms':>16}{'plan ms':>16}")
        for engine in engines:
            result = results[(query, engine)]
            if "error" in result:
                print(f"  {engine:<17}  not run: {result['error']}")
                continue
            cells = [cell(result, base, key) for key in ("cold_ms", "warm_ms", "plan_ms")]
            print(f"  {engine:<17}" + "".join(f"{c:>16}" for c in cells))
        if not agreed:
            raise SystemExit(f"{query}: the engines' answers differ")


def cell(result, base, key):
    value = result.get(key)
    if value is None:
        return "-"
    if base.get(key) in (None, 0) or result is base:
        return f"{value:.1f}"
    return f"{value:.1f} ({value / base[key]:.1f}x)"


if __name__ == "__main__":
    main()
