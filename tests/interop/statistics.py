"""The reference side of icefloe's statistics checks (driven by tests/interop/statistics.rs).

    statistics.py check WAREHOUSE

icefloe created and wrote partitioned tables in the SQLite catalog of WAREHOUSE (listed in
WAREHOUSE/statistics.json, each with its "t$statistics" rows as an Arrow IPC file), then
computed their table statistics (a Puffin file of theta sketches) and partition statistics (a
Parquet file). Independently of icefloe:
  (a) PyIceberg 0.12 parses `statistics` and `partition-statistics` from the metadata file:
      snapshot ids, paths, sizes, footer sizes, blob types, fields and `ndv` properties must
      be what icefloe's "t$statistics" shows;
  (b) the Puffin file is laid out as the Puffin spec says (magic, footer, blob offsets) and the
      `datasketches` package (Apache DataSketches' C++ library) deserializes each theta blob:
      its estimate is the recorded ndv, and the data's distinct count (pyarrow over PyIceberg's
      scan: exact, the sketches being under their 4,096 entries);
  (c) pyarrow reads the partition statistics file: its field ids, names and requiredness are
      the spec's ("Partition Statistics File", as written out below), its rows are sorted by
      partition with nulls first, and their counts are PyIceberg's `inspect.partitions()` for
      the file's snapshot (PyIceberg counts deletion vectors as position delete files; rows of
      the file without live files are partitions whose files were all deleted: not PyIceberg's).
PyIceberg 0.12 neither computes nor reads partition statistics files, so (c) is the comparison
there is. Exit status 1 on any mismatch, after printing every check.
"""

import json
import struct
import sys

import datasketches
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog

# The spec's "Partition Statistics File" schema: (field id, name, required in v1/v2, in v3).
SPEC_FIELDS = [
    (1, "partition", True, True),
    (2, "spec_id", True, True),
    (3, "data_record_count", True, True),
    (4, "data_file_count", True, True),
    (5, "total_data_file_size_in_bytes", True, True),
    (6, "position_delete_record_count", False, True),
    (7, "position_delete_file_count", False, True),
    (13, "dv_count", None, True),
    (8, "equality_delete_record_count", False, True),
    (9, "equality_delete_file_count", False, True),
    (10, "total_record_count", False, False),
    (11, "last_updated_at", False, False),
    (12, "last_updated_snapshot_id", False, False),
]

PUFFIN_MAGIC = b"PFA1"
THETA = "apache-datasketches-theta-v1"


def same(label, expected, got):
    if expected == got:
        print(f"  ok   {label}")
        return True
    print(f"  FAIL {label}:\n       expected: {expected}\n       got:      {got}")
    return False


def local(path):
    return path[len("file://"):] if path.startswith("file://") else path


def read_ipc(path):
    with pa.ipc.open_file(path) as reader:
        return reader.read_all()


def field_id(field):
    return int((field.metadata or {}).get(b"PARQUET:field_id", b"-1"))


def check_metadata(table, shown):
    """(a): PyIceberg's parse of the metadata against icefloe's "t$statistics" rows."""
    ok = True
    metadata = table.metadata
    ours = []
    for f in metadata.statistics:
        for b in f.blob_metadata:
            ours.append({
                "snapshot_id": f.snapshot_id, "kind": "table",
                "statistics_path": f.statistics_path,
                "file_size_in_bytes": f.file_size_in_bytes,
                "file_footer_size_in_bytes": f.file_footer_size_in_bytes,
                "blob_type": b.type, "blob_snapshot_id": b.snapshot_id,
                "blob_sequence_number": b.sequence_number, "fields": list(b.fields),
                "ndv": int(b.properties["ndv"]) if b.properties and "ndv" in b.properties
                else None,
            })
    for f in metadata.partition_statistics:
        ours.append({
            "snapshot_id": f.snapshot_id, "kind": "partition",
            "statistics_path": f.statistics_path,
            "file_size_in_bytes": f.file_size_in_bytes,
            "file_footer_size_in_bytes": None, "blob_type": None, "blob_snapshot_id": None,
            "blob_sequence_number": None, "fields": None, "ndv": None,
        })
    keys = list(ours[0].keys()) if ours else []
    theirs = [{k: row[k] for k in keys} for row in shown.to_pylist()]
    key = lambda r: json.dumps(r, sort_keys=True)
    ok &= same("PyIceberg parses the statistics icefloe shows",
               sorted(theirs, key=key), sorted(ours, key=key))
    current = metadata.current_snapshot_id
    ok &= same("statistics files are of the current snapshot",
               {current}, {r["snapshot_id"] for r in ours})
    ok &= same("one partition statistics file", 1, len(metadata.partition_statistics))
    return ok


def puffin_blobs(path, recorded_size, recorded_footer):
    """The footer's blobs of a Puffin file, checked against the spec's layout."""
    data = open(local(path), "rb").read()
    ok = same("Puffin size as recorded", recorded_size, len(data))
    ok &= same("Puffin magic at both ends", (PUFFIN_MAGIC, PUFFIN_MAGIC), (data[:4], data[-4:]))
    payload_size, flags = struct.unpack("<ii", data[-12:-4])
    ok &= same("Puffin footer uncompressed", 0, flags & 1)
    footer_start = len(data) - 12 - payload_size - 4
    ok &= same("Puffin footer size as recorded", recorded_footer, len(data) - footer_start)
    ok &= same("Puffin footer magic", PUFFIN_MAGIC, data[footer_start:footer_start + 4])
    footer = json.loads(data[footer_start + 4:len(data) - 12])
    return ok, data, footer["blobs"]


def check_sketches(table, schema_by_id):
    """(b): every theta blob deserialized by datasketches against ndv and the data."""
    ok = True
    scanned = table.scan().to_arrow()
    for f in table.metadata.statistics:
        good, data, blobs = puffin_blobs(
            f.statistics_path, f.file_size_in_bytes, f.file_footer_size_in_bytes)
        ok &= good
        recorded = {tuple(b.fields): b for b in f.blob_metadata}
        ok &= same("footer blobs are the metadata's blobs", sorted(recorded),
                   sorted(tuple(b["fields"]) for b in blobs))
        for blob in blobs:
            (field,) = blob["fields"]
            name = schema_by_id[field]
            label = f"theta sketch of {name}"
            ok &= same(f"{label}: type", THETA, blob["type"])
            ok &= same(f"{label}: stored uncompressed", None, blob.get("compression-codec"))
            raw = data[blob["offset"]:blob["offset"] + blob["length"]]
            sketch = datasketches.compact_theta_sketch.deserialize(raw)
            estimate = round(sketch.get_estimate())
            ndv = int(recorded[(field,)].properties["ndv"])
            ok &= same(f"{label}: datasketches' estimate is the recorded ndv", ndv, estimate)
            ok &= same(f"{label}: in exact mode", False, sketch.is_estimation_mode())
            distinct = pc.count_distinct(scanned.column(name), mode="only_valid").as_py()
            ok &= same(f"{label}: the data's distinct count", distinct, estimate)
    return ok


def check_file_schema(schema, version):
    """(c): the file's field ids, names and requiredness against the spec's table."""
    expected = [(fid, name, v3 if version >= 3 else v12)
                for fid, name, v12, v3 in SPEC_FIELDS if version >= 3 or v12 is not None]
    got = [(field_id(f), f.name, not f.nullable) for f in schema]
    return same(f"partition statistics schema (v{version})", expected, got)


def sort_key(partition, names):
    """Ascending, nulls first, field by field (the fields are ordered by field id)."""
    return tuple((v is not None, v) for v in (partition[n] for n in names))


def check_partitions(table, version):
    """(c): the partition statistics file against PyIceberg's inspect.partitions()."""
    (stats,) = table.metadata.partition_statistics
    path = local(stats.statistics_path)
    ok = same("partition statistics size as recorded", stats.file_size_in_bytes,
              len(open(path, "rb").read()))
    schema = pq.read_schema(path)
    ok &= check_file_schema(schema, version)
    field_ids = {f.field_id for s in table.metadata.partition_specs for f in s.fields}
    struct_ids = [field_id(f) for f in schema.field("partition").type]
    ok &= same("unified partition type: every field of every spec by ascending id",
               sorted(field_ids), struct_ids)
    rows = pq.read_table(path).to_pylist()
    names = [f.name for f in schema.field("partition").type]
    ok &= same("rows sorted by partition, nulls first",
               sorted([sort_key(r["partition"], names) for r in rows]),
               [sort_key(r["partition"], names) for r in rows])
    snapshot = table.metadata.snapshot_by_id(stats.snapshot_id)
    theirs = table.inspect.partitions(snapshot_id=snapshot.snapshot_id).to_pylist()
    ours, emptied = {}, []
    for r in rows:
        dvs = r.get("dv_count") or 0
        live = r["data_file_count"] + (r["position_delete_file_count"] or 0) + dvs \
            + (r["equality_delete_file_count"] or 0)
        if not live:
            emptied.append(r)
            continue
        ours[json.dumps(r["partition"], sort_keys=True, default=str)] = {
            "spec_id": r["spec_id"],
            "record_count": r["data_record_count"],
            "file_count": r["data_file_count"],
            "total_data_file_size_in_bytes": r["total_data_file_size_in_bytes"],
            "position_delete_record_count": r["position_delete_record_count"] or 0,
            "position_delete_file_count": (r["position_delete_file_count"] or 0) + dvs,
            "equality_delete_record_count": r["equality_delete_record_count"] or 0,
            "equality_delete_file_count": r["equality_delete_file_count"] or 0,
            "last_updated_snapshot_id": r["last_updated_snapshot_id"],
        }
    pyiceberg = {
        json.dumps(r["partition"], sort_keys=True, default=str):
            {k: r[k] for k in next(iter(ours.values()))} for r in theirs
    }
    ok &= same(f"{len(ours)} partitions: counts as PyIceberg's inspect.partitions()",
               pyiceberg, ours)
    ok &= same("rows without live files have zero counts", [],
               [r for r in emptied if r["data_record_count"] or r["position_delete_record_count"]])
    if version >= 3:
        ok &= same("deletion vectors counted in dv_count, not as position delete files", True,
                   sum(r["dv_count"] for r in rows) > 0
                   and sum(r["position_delete_file_count"] for r in rows) == 0)
    # total_record_count: known where there are no equality deletes or position delete files.
    known = [r for r in rows if not r["equality_delete_record_count"]
             and not r["position_delete_file_count"]]
    ok &= same("total_record_count where metadata knows it",
               [max(0, r["data_record_count"] - (r["position_delete_record_count"] or 0))
                for r in known],
               [r["total_record_count"] for r in known])
    return ok


def check(warehouse):
    cat = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db",
                     warehouse=f"file://{warehouse}")
    config = json.load(open(f"{warehouse}/statistics.json"))
    ok = True
    for entry in config["tables"]:
        print(f"{entry['name']} (v{entry['format_version']}):")
        table = cat.load_table(entry["name"])
        schema_by_id = {f.field_id: f.name for f in table.schema().fields}
        ok &= check_metadata(table, read_ipc(entry["statistics"]))
        ok &= check_sketches(table, schema_by_id)
        ok &= check_partitions(table, entry["format_version"])
    return ok


def main(argv):
    if len(argv) != 3 or argv[1] != "check":
        print(__doc__)
        return 2
    return 0 if check(argv[2]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
