"""The S3 side of icefloe's object store tests (tests/conformance/s3.rs).

`s3.py server`: starts moto's S3 server on 127.0.0.1 (a free port), prints the port, and runs
until its standard input closes (the test process holding it ended), so no server outlives the
tests.

`s3.py read ENDPOINT METADATA_LOCATION`: PyIceberg (its pyarrow FileIO, pyarrow's S3 file
system) reads the table whose metadata file is METADATA_LOCATION on the S3 server at ENDPOINT,
and prints its rows as JSON lines, sorted, plus one line per snapshot
(`{"snapshot": id, "rows": n}`).
"""

import json
import sys
import time


def server():
    import logging

    import threading

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication
    from moto.server import ThreadedMotoServer

    # One log line per request would bury the tests' own output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    # moto checks `If-None-Match: *` and then stores the object, with nothing between the two
    # held across request threads: two concurrent conditional PUTs of one key can both succeed
    # (seen: a racing-writers test lost a commit), where S3 decides them atomically. Writes are
    # therefore handled one at a time here, so that the server answers conditional writes as
    # S3 does; reads stay concurrent.
    writes = threading.Lock()
    dispatch = DomainDispatcherApplication.__call__

    # moto takes any credentials. A session token of the form the REST test server vends
    # (`session-<n>-until-<epoch ms>`, tests/interop/rest_adapter.py) is refused once that time
    # has passed, as S3 refuses an expired STS token, so that a client which goes on with
    # expired vended credentials fails.
    def expired(environ):
        token = environ.get("HTTP_X_AMZ_SECURITY_TOKEN", "")
        until = token.rpartition("-until-")[2]
        return token.startswith("session-") and until.isdigit() and int(until) < time.time() * 1000

    def serialized(self, environ, start_response):
        if expired(environ):
            body = (
                b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>ExpiredToken</Code>'
                b"<Message>The provided token has expired.</Message></Error>"
            )
            start_response("400 Bad Request", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
            return [body]
        if environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE"):
            with writes:
                # The whole answer is made inside the lock (moto answers with a list of bytes).
                return list(dispatch(self, environ, start_response))
        return dispatch(self, environ, start_response)

    DomainDispatcherApplication.__call__ = serialized

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    print(moto.get_host_and_port()[1], flush=True)
    try:
        sys.stdin.read()
    finally:
        moto.stop()


def properties(endpoint):
    return {
        "s3.endpoint": endpoint,
        "s3.region": "us-east-1",
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
        "s3.path-style-access": "true",
        "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
    }


def read(endpoint, metadata_location):
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_location, properties=properties(endpoint))
    rows = table.scan().to_arrow().to_pylist()
    for line in sorted(json.dumps(row, sort_keys=True, default=str) for row in rows):
        print(line)
    for snapshot in table.metadata.snapshots:
        count = len(table.scan(snapshot_id=snapshot.snapshot_id).to_arrow())
        print(json.dumps({"snapshot": snapshot.snapshot_id, "rows": count}))


def main(argv):
    command, *args = argv
    if command == "server":
        server()
    elif command == "read":
        read(*args)
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
