"""Metadata tables through datafusion-python, against PyIceberg's `inspect` answers."""

import datafusion
import pytest

from test_read import oracles, open_table, scalar


def rows(ctx, sql):
    return [tuple(r.values()) for b in ctx.sql(sql).collect() for r in b.to_pylist()]


@pytest.mark.parametrize("answers", oracles())
def test_snapshots_and_files_are_pyiceberg_s(answers):
    expected = answers["inspect"]["snapshots"]
    if isinstance(expected, list):
        ctx = datafusion.SessionContext()
        ctx.register_table("s", open_table(answers).metadata("snapshots"))
        got = rows(ctx, "SELECT snapshot_id, operation FROM s ORDER BY committed_at, snapshot_id")
        assert got == [(s["snapshot_id"], s["operation"]) for s in expected]
    for snapshot in answers["snapshots"]:
        files = snapshot["inspect"]["files"]
        if not isinstance(files, list):
            continue  # PyIceberg could not answer (tables with a uuid column)
        table = open_table(answers, snapshot_id=snapshot["snapshot_id"])
        ctx = datafusion.SessionContext()
        ctx.register_table("f", table.metadata("files"))
        got = rows(ctx, "SELECT content, record_count FROM f ORDER BY content, record_count")
        assert got == sorted((f["content"], f["record_count"]) for f in files), snapshot


def test_an_unknown_metadata_table_is_a_value_error():
    from test_read import WH1
    import icefloe

    table = icefloe.Table.open(str(WH1 / "db" / "orders"), relocate={"file:///data/lake/wh1": str(WH1)})
    with pytest.raises(ValueError, match="no_such"):
        table.metadata("no_such")
