"""icefloe tables read through datafusion-python, against PyIceberg's answers.

The tables are the PyIceberg-written warehouse the Rust tests use
(tests/fixtures/pyiceberg/wh1, copied from the shared fixtures); its oracle files hold what
PyIceberg (cross-checked by DuckDB) answered for every snapshot, filter, ref and timestamp.
"""

import json
from pathlib import Path

import datafusion
import pytest

import icefloe

WH1 = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "pyiceberg" / "wh1"
WRITTEN_AT = "file:///data/lake/wh1"
# PyIceberg cannot read equality deletes: its answers for that table are not the table's.
NOT_PYICEBERG_ANSWERS = {"db.deletes_eq"}


def oracles():
    return list(_oracles())


def _oracles():
    for path in sorted((WH1 / "oracle").glob("*.json")):
        answers = json.loads(path.read_text())
        if answers["identifier"] not in NOT_PYICEBERG_ANSWERS:
            yield pytest.param(answers, id=answers["identifier"])


def open_table(answers, **selection):
    location = answers["metadata_location"].replace("{warehouse}", WRITTEN_AT)
    return icefloe.Table.open(location, relocate={WRITTEN_AT: str(WH1)}, **selection)


def scalar(ctx, sql):
    batches = ctx.sql(sql).collect()
    return batches[0].column(0)[0].as_py()


def registered(table):
    ctx = datafusion.SessionContext()
    ctx.register_table("t", table)
    return ctx


@pytest.mark.parametrize("answers", oracles())
def test_every_snapshot_and_filter_counts_as_pyiceberg(answers):
    for snapshot in answers["snapshots"]:
        ctx = registered(open_table(answers, snapshot_id=snapshot["snapshot_id"]))
        where = f"{answers['identifier']} at snapshot {snapshot['snapshot_id']}"
        assert scalar(ctx, "SELECT count(*) FROM t") == snapshot["row_count"], where
        for f in snapshot["filters"]:
            if f.get("sql_semantics_may_differ") or "row_count" not in f:
                expected = f.get("duckdb_row_count")
            else:
                expected = f["row_count"]
            if expected is None:
                continue  # neither PyIceberg nor DuckDB answered this filter
            if "AS UUID)" in f["sql"]:
                # datafusion-python plans SQL with DataFusion's own planner, which has no UUID
                # type (icefloe's dialect, not carried over the FFI, has).
                continue
            got = scalar(ctx, f"SELECT count(*) FROM t WHERE {f['sql']}")
            assert got == expected, f"{where}: {f['sql']}"


@pytest.mark.parametrize("answers", oracles())
def test_refs_and_timestamps_read_their_snapshots(answers):
    for name, ref in answers["refs_answers"].items():
        if "row_count" not in ref:
            continue
        ctx = registered(open_table(answers, ref=name))
        assert scalar(ctx, "SELECT count(*) FROM t") == ref["row_count"], name
    for point in answers["time_travel"]:
        if point.get("snapshot_id") is None:
            # Before the first snapshot: nothing to read, as icefloe's Rust API says.
            with pytest.raises(icefloe.IcefloeError):
                open_table(answers, as_of=point["timestamp_ms"])
            continue
        ctx = registered(open_table(answers, as_of=point["timestamp_ms"]))
        assert scalar(ctx, "SELECT count(*) FROM t") == point["row_count"], point


def test_errors_are_exceptions_naming_the_table():
    missing = WH1 / "db" / "no_such_table"
    with pytest.raises(icefloe.IcefloeError, match="no_such_table"):
        icefloe.Table.open(str(missing))
    answers = json.loads((WH1 / "oracle" / "db.orders.json").read_text())
    with pytest.raises(icefloe.IcefloeError, match="12345"):
        open_table(answers, snapshot_id=12345)
    with pytest.raises(ValueError, match="at most one"):
        open_table(answers, snapshot_id=1, ref="main")
