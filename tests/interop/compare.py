"""Canonical forms of values read by any engine, and multiset comparisons that print diffs.

A value's canonical form is a JSON-ready Python value: floats keep NaN, infinities and the sign
of zero as strings; decimals as their string (scale kept); dates, times and timestamps in ISO
8601 (timestamps with a zone in UTC); uuids dashed; bytes in hex; maps as sorted pairs.
"""

import datetime as dt
import json
import math
import uuid
from decimal import Decimal

SHOWN = 5  # unmatched rows printed per side


def canon(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value) or value == 0.0:
            return repr(value)  # 'inf', '-inf', '0.0', '-0.0'
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [canon(v) for v in value]
        if items and all(isinstance(v, list) and len(v) == 2 for v in items):
            return sorted(items, key=json.dumps)  # a map's (key, value) pairs: no order
        return items
    raise TypeError(f"no canonical form for {type(value).__name__}: {value!r}")


def canon_rows(table, columns, uuid_columns=()):
    """The rows of a pyarrow table, restricted to `columns`, each value canonical.

    `uuid_columns` are read as uuids whatever the engine returns (16 bytes or a UUID)."""
    out = []
    for row in table.select(columns).to_pylist():
        for c in uuid_columns:
            if isinstance(row[c], (bytes, bytearray)):
                row[c] = uuid.UUID(bytes=bytes(row[c]))
        out.append({c: canon(row[c]) for c in columns})
    return out


def same_rows(label, expected, actual):
    """Compares two lists of canonical rows as multisets; prints a diff and returns False."""
    exp = sorted(json.dumps(r, sort_keys=True) for r in expected)
    act = sorted(json.dumps(r, sort_keys=True) for r in actual)
    if exp == act:
        print(f"  ok   {label}: {len(act)} rows match")
        return True
    missing = _minus(exp, act)
    extra = _minus(act, exp)
    print(f"  FAIL {label}: expected {len(exp)} rows, got {len(act)}")
    for name, rows in (("expected, not found", missing), ("found, not expected", extra)):
        print(f"       {len(rows)} {name}:")
        for r in rows[:SHOWN]:
            print(f"         {r}")
    extras = [json.loads(r) for r in extra]
    for row in missing[:SHOWN]:
        if extras:
            _print_cell_diff(json.loads(row), extras)
    return False


def _minus(a, b):
    rest = list(b)
    out = []
    for x in a:
        if x in rest:
            rest.remove(x)
        else:
            out.append(x)
    return out


def _print_cell_diff(missing, extras):
    """The columns in which a missing row differs from the extra row with its `row` number, or
    else from the closest one."""
    def distance(row):
        same_key = missing.get("row") == row.get("row")
        return (not same_key, sum(missing.get(k) != row.get(k) for k in missing))

    closest = min(extras, key=distance)
    key = f"row {missing['row']}" if "row" in missing else "closest pair"
    print(f"       {key} differs in:")
    for k in sorted(missing):
        if missing[k] != closest.get(k):
            print(f"         {k}: expected {missing[k]!r}, got {closest.get(k)!r}")
