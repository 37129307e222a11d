"""Reads an Iceberg table written by a distributed INSERT with engines that are not icefloe:
PyIceberg (StaticTable) and DuckDB (iceberg_scan). Prints one JSON object with each engine's
rows (lists, sorted); the test compares them with the rows icefloe inserted.

Usage: read_back.py <metadata.json> <column> [<column> ...]
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "interop"))
from interop import duckdb_connection  # noqa: E402


def main():
    metadata, columns = sys.argv[1], sys.argv[2:]
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata).scan().to_arrow()
    pyiceberg = sorted(zip(*(table.column(c).to_pylist() for c in columns)))
    con, why_not = duckdb_connection()
    if con is None:
        raise SystemExit(f"DuckDB did not load: {why_not}")
    listed = ", ".join(columns)
    duckdb = sorted(con.execute(f"SELECT {listed} FROM iceberg_scan('{metadata}')").fetchall())
    print(json.dumps({"pyiceberg": [list(r) for r in pyiceberg], "duckdb": [list(r) for r in duckdb]}))


if __name__ == "__main__":
    main()
