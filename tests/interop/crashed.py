"""PyIceberg reads the tables the crash suite left (tests/concurrency/crash.rs).

Input (argv[1]): a JSON list of {"dir", "catalog", "rows"}. A catalog table is `db.t` of the
SQLite catalog at "catalog" (PyIceberg's SqlCatalog); a directory table is read as Java's
Hadoop tables find their current version: the version hint, then forward while the next
`vN.metadata.json` exists. Prints one line per mismatch and exits 1 if there is any.
"""

import json
import os
import sys

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable


def directory_metadata(table_dir):
    metadata = os.path.join(table_dir, "metadata")
    with open(os.path.join(metadata, "version-hint.text")) as hint:
        version = int(hint.read().strip())
    while os.path.exists(os.path.join(metadata, f"v{version + 1}.metadata.json")):
        version += 1
    return os.path.join(metadata, f"v{version}.metadata.json")


def rows_of(case):
    if case["catalog"]:
        catalog = SqlCatalog("default", uri=f"sqlite:///{case['catalog']}", warehouse=case["dir"])
        table = catalog.load_table("db.t")
    else:
        table = StaticTable.from_metadata(directory_metadata(os.path.join(case["dir"], "t")))
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    bad = 0
    for case in cases:
        got = rows_of(case)
        if got != case["rows"]:
            bad += 1
            print(f"MISMATCH {case['dir']}: PyIceberg reads {got}, icefloe {case['rows']}")
    print(f"pyiceberg: {len(cases) - bad} of {len(cases)} crashed tables read the same rows")
    sys.exit(1 if bad else 0)


main()
