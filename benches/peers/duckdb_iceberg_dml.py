"""DuckDB's iceberg extension running the statements of benches/dml.rs on the same Iceberg
table, through a REST catalog (the only way it writes Iceberg tables).

    ICEFLOE_REST_PYTHON=... python benches/peers/duckdb_iceberg_dml.py WAREHOUSE [RUNS]

Run with the interop virtualenv's Python (DuckDB and its extensions from PyPI, PyIceberg);
ICEFLOE_REST_PYTHON is the REST virtualenv's (FastAPI, uvicorn), which serves
tests/interop/rest_adapter.py (PyIceberg's SqlCatalog behind the REST protocol) on 127.0.0.1
for the run and stops it after. WAREHOUSE is the directory `cargo bench --bench dml` keeps
when ICEFLOE_DML_BENCH_KEEP is set: for each run the table `db.cow` of its SQLite catalog is
registered in the REST catalog under a fresh name (the same metadata file and data files, so
every run starts from the same snapshot), and DuckDB, attached to that catalog, times one
statement on it. DuckDB writes merge-on-read (position delete files); each time includes its
REST round trips (loading the table, the commit through PyIceberg).
"""

import glob
import os
import sqlite3
import statistics
import subprocess
import sys
import time

from duckdb_dml import STATEMENTS  # beside this script


def duckdb_connection(uri):
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_httpfs
    import duckdb_extension_iceberg

    con = duckdb.connect()
    for module in (duckdb_extension_avro, duckdb_extension_httpfs, duckdb_extension_iceberg):
        (path,) = glob.glob(f"{os.path.dirname(module.__file__)}/extensions/*/*.duckdb_extension")
        con.execute(f"LOAD '{path}'")
    con.execute(
        "CREATE SECRET adapter (TYPE iceberg, CLIENT_ID 'icefloe', CLIENT_SECRET 's3cret', "
        f"OAUTH2_SERVER_URI '{uri}/v1/oauth/tokens')"
    )
    con.execute(f"ATTACH '' AS lake (TYPE iceberg, ENDPOINT '{uri}', SECRET adapter)")
    # The bench table sets write.target-file-size-bytes, which DuckDB refuses for partitioned
    # tables unless told to ignore it.
    con.execute("SET ignore_target_file_size_for_partitioned_tables = true")
    return con, duckdb.__version__


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    warehouse = argv[1]
    runs = int(argv[2]) if len(argv) > 2 else 5
    rest_python = os.environ.get("ICEFLOE_REST_PYTHON")
    if not rest_python:
        print("ICEFLOE_REST_PYTHON is not set (the REST virtualenv's python)")
        return 2
    with sqlite3.connect(f"{warehouse}/catalog.db") as db:
        (metadata,) = db.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'db' AND table_name = 'cow'"
        ).fetchone()
    adapter = os.path.join(os.path.dirname(__file__), "../../tests/interop/rest_adapter.py")
    state = os.path.join(warehouse, "rest-state")
    os.makedirs(state, exist_ok=True)
    server = subprocess.Popen(
        [rest_python, adapter, "server", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(server.stdout.readline())
        uri = f"http://127.0.0.1:{port}"
        from pyiceberg.catalog import load_catalog

        catalog = load_catalog("adapter", type="rest", uri=uri, credential="icefloe:s3cret")
        catalog.create_namespace("db")
        names = {}
        for name in STATEMENTS:
            names[name] = []
            for run in range(runs):
                table = f"t{len(names) - 1}_{run}"
                catalog.register_table(f"db.{table}", metadata)
                names[name].append(table)
        con, version = duckdb_connection(uri)
        with open(f"{warehouse}/source_files.txt") as f:
            source = [line.strip() for line in f if line.strip()]
        con.execute("CREATE TABLE source AS SELECT * FROM read_parquet(?)", [source])
        print(f"duckdb {version} iceberg extension, through a REST catalog (rest_adapter.py)")
        for name, statement in STATEMENTS.items():
            times = []
            for table in names[name]:
                query = statement.format(t=f"lake.db.{table}")
                started = time.perf_counter()
                con.execute(query).fetchall()
                times.append(time.perf_counter() - started)
            print(f"{name}: median {statistics.median(times) * 1000:.1f} ms "
                  f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}, {runs} runs)")
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
