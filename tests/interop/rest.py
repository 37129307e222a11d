"""The REST side of icefloe's REST catalog tests (tests/conformance/rest.rs).

`rest.py server STATE_DIR`: starts lakana-server (a REST catalog icefloe did not write: PyPI's
`lakana-server`, sqlite metadata, tables under STATE_DIR/wh) on 127.0.0.1 on a free port,
makes its environment `dev` (the REST prefix), prints the port, and runs until its standard
input closes, then stops the server: no server outlives the tests.

PyIceberg's REST client, on the catalog at URI with the token TOKEN and prefix `dev`:
`rest.py create URI TOKEN NS.TABLE`: creates the table (id long, name string) and appends
rows 1..3; `rest.py append URI TOKEN NS.TABLE FIRST COUNT`: appends rows FIRST..FIRST+COUNT-1,
one commit each when COUNT is negative (-COUNT commits of one row); `rest.py read URI TOKEN
NS.TABLE`: prints the rows as sorted JSON lines, then one line per snapshot and per ref.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

KEY_ID = "0123456789abcdef"
SECRET = "icefloe-test-secret-0123456789ab"
TOKEN = f"lakana_pat_{KEY_ID}_{SECRET}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server(state):
    os.makedirs(os.path.join(state, "wh"), exist_ok=True)
    port = free_port()
    env = dict(
        os.environ,
        LAKANA_DATABASE__URL=f"sqlite:///{state}/meta.db",
        LAKANA_BOOTSTRAP_PAT_KEY_ID=KEY_ID,
        LAKANA_BOOTSTRAP_PAT_SECRET=SECRET,
        LAKANA_HOST="127.0.0.1",
        LAKANA_PORT=str(port),
        LAKANA_LOG__LEVEL="WARNING",
    )
    bindir = os.path.dirname(sys.executable)
    lakana = os.path.join(bindir, "lakana-server")
    with open(os.path.join(state, "migrate.log"), "w") as log:
        subprocess.run([lakana, "migrate"], env=env, stdout=log, stderr=log, timeout=120, check=True)
    log = open(os.path.join(state, "server.log"), "w")
    proc = subprocess.Popen([lakana], env=env, stdout=log, stderr=log)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/v1/config", timeout=1).read()
                break
            except Exception:
                if proc.poll() is not None:
                    raise SystemExit("lakana-server exited; see " + state + "/server.log")
                time.sleep(0.2)
        else:
            raise SystemExit("lakana-server did not answer within 60 s")
        body = json.dumps({"name": "dev", "storage": {"scheme": "file", "root": f"file://{state}/wh"}})
        request = urllib.request.Request(
            f"{base}/api/v1/environments",
            data=body.encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
            method="POST",
        )
        urllib.request.urlopen(request, timeout=30).read()
        print(port, flush=True)
        sys.stdin.read()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def catalog(uri, token):
    from pyiceberg.catalog import load_catalog

    return load_catalog("lakana", type="rest", uri=uri, token=token, prefix="dev")


def rows(first, count):
    import pyarrow as pa

    ids = list(range(first, first + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids])})


def create(uri, token, name):
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))
    table = catalog(uri, token).create_table(name, schema=schema)
    table.append(rows(1, 3))


def append(uri, token, name, first, count):
    first, count = int(first), int(count)
    table = catalog(uri, token).load_table(name)
    if count >= 0:
        table.append(rows(first, count))
    else:
        for i in range(-count):
            table.append(rows(first + i, 1))


def read(uri, token, name):
    print_table(catalog(uri, token).load_table(name))


def print_table(table):
    """The rows of a PyIceberg table as sorted JSON lines, then one line per snapshot and per ref
    (also the output of `rest_adapter.py read`)."""
    for line in sorted(json.dumps(r, sort_keys=True) for r in table.scan().to_arrow().to_pylist()):
        print(line)
    for snapshot in table.metadata.snapshots:
        count = len(table.scan(snapshot_id=snapshot.snapshot_id).to_arrow())
        print(json.dumps({"snapshot": snapshot.snapshot_id, "rows": count}))
    for ref, value in sorted(table.metadata.refs.items()):
        print(json.dumps({"ref": ref, "type": str(value.snapshot_ref_type), "snapshot": value.snapshot_id}))


def main(argv):
    command, *args = argv
    {"server": server, "create": create, "append": append, "read": read}[command](*args)


if __name__ == "__main__":
    main(sys.argv[1:])
