"""PyIceberg's side of the table-changes cross-check (tests/interop/changes.rs).

    changes.py apply IN OUT      IN: {"scenarios": [{"name", "base" (null: a new table),
                                                     "updates", "previous-file"}]}
                                 OUT: [{"name", "metadata"} or {"name", "error"}]
    changes.py requests IN OUT   IN: {"base", "requirements", "request"}
                                 OUT: {"checks": [{"with-table", "without-table"}], "request"}

`apply` reads icefloe's JSON of each list of updates with PyIceberg's pydantic models
(`pyiceberg.table.update.TableUpdate`) and applies them with `update_table_metadata` to the
same base metadata; the result is written as PyIceberg writes metadata. `requests` checks each
requirement (`TableRequirement.validate`) against the base and against no table, and reads
icefloe's JSON of a `CommitTableRequest` and writes it back as PyIceberg writes it.
"""

import json
import sys

from pydantic import TypeAdapter

from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import CommitTableRequest
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.table.update import TableRequirement, TableUpdate, update_table_metadata

UPDATES = TypeAdapter(list[TableUpdate])
REQUIREMENTS = TypeAdapter(list[TableRequirement])


def apply(scenarios):
    out = []
    for scenario in scenarios:
        new = scenario["base"] is None
        # A new table starts from PyIceberg's own empty metadata, as its catalogs create one.
        base = MetastoreCatalog._empty_table_metadata() if new else TableMetadataUtil.parse_obj(scenario["base"])
        updates = UPDATES.validate_python(scenario["updates"])
        try:
            result = update_table_metadata(
                base,
                tuple(updates),
                enforce_validation=new,
                metadata_location=scenario.get("previous-file"),
            )
        except Exception as e:  # noqa: BLE001 - reported to the Rust side, which judges it
            out.append({"name": scenario["name"], "error": f"{type(e).__name__}: {e}"})
            continue
        out.append({"name": scenario["name"], "metadata": json.loads(result.model_dump_json())})
    return out


def check(requirement, metadata):
    try:
        requirement.validate(metadata)
        return "ok"
    except CommitFailedException as e:
        return f"failed: {e}"


def requests(spec):
    base = TableMetadataUtil.parse_obj(spec["base"])
    checks = [
        {"with-table": check(r, base), "without-table": check(r, None)}
        for r in REQUIREMENTS.validate_python(spec["requirements"])
    ]
    request = CommitTableRequest.model_validate_json(json.dumps(spec["request"]))
    return {"checks": checks, "request": json.loads(request.model_dump_json())}


def main():
    mode, source, target = sys.argv[1:4]
    with open(source) as f:
        spec = json.load(f)
    result = apply(spec["scenarios"]) if mode == "apply" else requests(spec)
    with open(target, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
