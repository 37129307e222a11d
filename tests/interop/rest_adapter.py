"""A second REST catalog for icefloe's REST tests (tests/conformance/rest.rs): the Iceberg REST
protocol served over PyIceberg's own `SqlCatalog`.

lakana-server (tests/interop/rest.py) refuses what a platform catalog keeps to itself
(`remove-snapshots` is 403) and serves no stage-create, register, multi-table transactions or
HEAD. This server answers those, and every decision in it is PyIceberg's: requirements are
checked and updates applied by `SqlCatalog.commit_table`, tables are created, registered,
renamed and dropped by `SqlCatalog`, metadata is PyIceberg's `TableMetadata`. What is written
here is only the HTTP mapping of the REST OpenAPI onto those calls, plus what a server must do
that the spec lets a client test: it pages every listing (two items a page unless asked),
serves OAuth2 client credentials (`icefloe:s3cret`) with tokens that `POST /test/revoke`
invalidates, and counts the tokens it issued (`GET /test/stats`); `POST
/test/credential-lifetime?ms=N` shortens the life of the credentials it vends. Not part of the protocol:
the transactions endpoint commits its tables one after another under one lock (PyIceberg's
SqlCatalog has no multi-table commit), checking every table's requirements first.

`rest_adapter.py server STATE_DIR [S3_ENDPOINT]`: starts on 127.0.0.1 on a free port, prints
the port, and runs until its standard input closes. With S3_ENDPOINT (moto, tests/interop/s3.py)
the warehouse is `s3://icefloe-vended/wh` there, and the server vends the store's credentials
to clients that ask (`X-Iceberg-Access-Delegation: vended-credentials`) as the
`storage-credentials` of each loaded table, as Polaris and Lakekeeper do; its own clients
(PyIceberg inside) use them too. `rest_adapter.py read URI NS.TABLE [S3_ENDPOINT]`: PyIceberg's
REST client reads the table (rows as sorted JSON lines, then one line per snapshot and per ref).
`rest_adapter.py duckdb URI QUERY...`: DuckDB's iceberg extension attached to the catalog as
`lake` runs each query (one JSON line of rows each).
"""

import base64
import json
import os
import socket
import sys
import threading
import time
from urllib.parse import parse_qs

CLIENT_ID, CLIENT_SECRET = "icefloe", "s3cret"
PREFIX = "adapter"
PAGE = 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


VENDED_BUCKET = "icefloe-vended"


# What the adapter vends (moto takes any key); tests look for it where no secret may be.
VENDED_SECRET = "vended-secret-never-printed"


def s3_properties(endpoint, secret="testing"):
    return {
        "s3.endpoint": endpoint,
        "s3.access-key-id": "testing",
        "s3.secret-access-key": secret,
        "s3.region": "us-east-1",
        "s3.path-style-access": "true",
    }


def app(state, s3_endpoint=None):
    from fastapi import FastAPI, Request, Response
    from fastapi.responses import JSONResponse
    from pyiceberg import exceptions as ex
    from pyiceberg.catalog.rest import CreateTableRequest, RegisterTableRequest
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.table import CommitTableRequest
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
    from pyiceberg.table.update import AssertCreate

    os.makedirs(os.path.join(state, "wh"), exist_ok=True)
    if s3_endpoint:
        vended = s3_properties(s3_endpoint, VENDED_SECRET)
        warehouse = f"s3://{VENDED_BUCKET}/wh"
    else:
        vended, warehouse = {}, f"file://{state}/wh"
    catalog = SqlCatalog("adapter", uri=f"sqlite:///{state}/catalog.db", warehouse=warehouse, **vended)
    api = FastAPI()
    tokens = {"issued": 0, "valid": set(), "loads": 0, "fail-next-commit": False, "lifetime-ms": 3_600_000, "credential-loads": 0}
    lock = threading.Lock()

    def error(status, kind, message):
        body = {"error": {"message": message, "type": kind, "code": status}}
        return JSONResponse(body, status_code=status)

    @api.middleware("http")
    async def guard(request: Request, call_next):
        path = request.url.path
        if path in ("/v1/oauth/tokens", "/v1/config") or path.startswith("/test/"):
            return await call_next(request)
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in tokens["valid"]:
            return error(401, "NotAuthorizedException", "no valid bearer token")
        try:
            return await call_next(request)
        except (ex.NoSuchTableError, ex.NoSuchNamespaceError) as e:
            return error(404, type(e).__name__, str(e))
        except (ex.TableAlreadyExistsError, ex.NamespaceAlreadyExistsError, ex.CommitFailedException) as e:
            return error(409, type(e).__name__, str(e))
        except ex.NamespaceNotEmptyError as e:
            return error(409, type(e).__name__, str(e))
        except (ValueError, ex.ValidationError) as e:
            return error(400, "BadRequestException", str(e))

    @api.post("/v1/oauth/tokens")
    async def token(request: Request):
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        client = (form.get("client_id"), form.get("client_secret"))
        basic = request.headers.get("authorization", "")
        if basic.startswith("Basic "):  # client_secret_basic (RFC 6749 2.3.1), as DuckDB sends
            client = tuple(base64.b64decode(basic[6:]).decode().split(":", 1))
        if form.get("grant_type") != "client_credentials" or client != (CLIENT_ID, CLIENT_SECRET):
            return JSONResponse({"error": "invalid_client", "error_description": "unknown client"}, status_code=401)
        tokens["issued"] += 1
        value = f"adapter-token-{tokens['issued']}"
        tokens["valid"].add(value)
        return {"access_token": value, "token_type": "bearer", "expires_in": 3600, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}

    @api.post("/test/revoke")
    def revoke():
        tokens["valid"].clear()
        return {}

    @api.get("/test/stats")
    def stats():
        return {"tokens-issued": tokens["issued"], "vended-loads": tokens["loads"], "credential-loads": tokens["credential-loads"]}

    @api.post("/test/credential-lifetime")
    def credential_lifetime(request: Request):
        """Vended credentials from now on expire `?ms=` ms after they are vended."""
        tokens["lifetime-ms"] = int(request.query_params["ms"])
        return {}

    @api.post("/test/fail-next-commit")
    def fail_next_commit():
        """The next table commit is made, and then answered with a 503: the answer lost."""
        tokens["fail-next-commit"] = True
        return {}

    @api.get("/v1/config")
    def config():
        routes = [
            "GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces",
            "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
            "DELETE /v1/{prefix}/namespaces/{namespace}", "POST /v1/{prefix}/namespaces/{namespace}/properties",
            "GET /v1/{prefix}/namespaces/{namespace}/tables", "POST /v1/{prefix}/namespaces/{namespace}/tables",
            "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
            "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
            "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
            "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
            "POST /v1/{prefix}/namespaces/{namespace}/register", "POST /v1/{prefix}/tables/rename",
            "POST /v1/{prefix}/transactions/commit",
            "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
        ]
        return {"defaults": {}, "overrides": {"prefix": PREFIX}, "endpoints": routes}

    def namespace(text):
        return tuple(text.split("\x1f"))

    def page(items, request):
        size = int(request.query_params.get("pageSize", PAGE))
        start = int(request.query_params.get("pageToken") or 0)
        chunk = items[start : start + size]
        token = str(start + size) if start + size < len(items) else None
        return chunk, token

    base = f"/v1/{PREFIX}"

    @api.get(base + "/namespaces")
    def list_namespaces(request: Request):
        parent = request.query_params.get("parent")
        found = sorted(catalog.list_namespaces(namespace(parent) if parent else ()))
        chunk, token = page([list(n) for n in found], request)
        return {"namespaces": chunk, "next-page-token": token}

    @api.post(base + "/namespaces")
    async def create_namespace(request: Request):
        body = await request.json()
        catalog.create_namespace(tuple(body["namespace"]), body.get("properties") or {})
        return {"namespace": body["namespace"], "properties": body.get("properties") or {}}

    @api.get(base + "/namespaces/{ns}")
    def load_namespace(ns: str):
        return {"namespace": list(namespace(ns)), "properties": catalog.load_namespace_properties(namespace(ns))}

    @api.head(base + "/namespaces/{ns}")
    def namespace_exists(ns: str):
        return Response(status_code=204 if catalog.namespace_exists(namespace(ns)) else 404)

    @api.delete(base + "/namespaces/{ns}")
    def drop_namespace(ns: str):
        catalog.drop_namespace(namespace(ns))
        return Response(status_code=204)

    @api.post(base + "/namespaces/{ns}/properties")
    async def namespace_properties(ns: str, request: Request):
        body = await request.json()
        done = catalog.update_namespace_properties(namespace(ns), set(body.get("removals") or []), body.get("updates") or {})
        return {"removed": done.removed, "updated": done.updated, "missing": done.missing}

    @api.get(base + "/namespaces/{ns}/tables")
    def list_tables(ns: str, request: Request):
        found = sorted(catalog.list_tables(namespace(ns)))
        chunk, token = page([{"namespace": list(t[:-1]), "name": t[-1]} for t in found], request)
        return {"identifiers": chunk, "next-page-token": token}

    def loaded(table, snapshots="all", request=None):
        metadata = json.loads(table.metadata.model_dump_json(by_alias=True, exclude_none=True))
        if snapshots == "refs":
            wanted = {r["snapshot-id"] for r in (metadata.get("refs") or {}).values()}
            metadata["snapshots"] = [s for s in metadata.get("snapshots", []) if s["snapshot-id"] in wanted]
        out = {"metadata-location": table.metadata_location, "metadata": metadata, "config": {}}
        delegation = request.headers.get("x-iceberg-access-delegation", "") if request else ""
        if vended and "vended-credentials" in delegation:
            tokens["loads"] += 1
            out["storage-credentials"] = storage_credentials()
        return out

    def storage_credentials():
        """A new short-lived session token, as a vending catalog gives with every load; the S3
        server (tests/interop/s3.py) refuses it once the time in it has passed."""
        config = dict(vended)
        until = int(time.time() * 1000) + tokens["lifetime-ms"]
        config["s3.session-token"] = f"session-{tokens['loads'] + tokens['credential-loads']}-until-{until}"
        config["s3.session-token-expires-at-ms"] = str(until)
        return [{"prefix": f"s3://{VENDED_BUCKET}/", "config": config}]

    @api.post(base + "/namespaces/{ns}/tables")
    async def create_table(ns: str, request: Request):
        # Optional in the OpenAPI, required (nullable) in PyIceberg's model.
        absent = {"location": None, "partition-spec": None, "write-order": None}
        body = CreateTableRequest.model_validate({**absent, **(await request.json())})
        ident = namespace(ns) + (body.name,)
        spec = body.partition_spec or UNPARTITIONED_PARTITION_SPEC
        order = body.write_order or UNSORTED_SORT_ORDER
        if body.stage_create:
            if catalog.table_exists(ident):
                raise ex.TableAlreadyExistsError(f"Table {'.'.join(ident)} already exists")
            staged = catalog._create_staged_table(ident, body.table_schema, body.location, spec, order, body.properties)
            out = loaded(staged, request=request)
            out.pop("metadata-location")
            return out
        table = catalog.create_table(ident, body.table_schema, body.location, spec, order, body.properties)
        return loaded(table, request=request)

    @api.get(base + "/namespaces/{ns}/tables/{name}")
    def load_table(ns: str, name: str, request: Request):
        table = catalog.load_table(namespace(ns) + (name,))
        return loaded(table, request.query_params.get("snapshots", "all"), request)

    @api.get(base + "/namespaces/{ns}/tables/{name}/credentials")
    def load_credentials(ns: str, name: str, request: Request):
        catalog.load_table(namespace(ns) + (name,))
        tokens["credential-loads"] += 1
        return {"storage-credentials": storage_credentials() if vended else []}

    @api.head(base + "/namespaces/{ns}/tables/{name}")
    def table_exists(ns: str, name: str):
        return Response(status_code=204 if catalog.table_exists(namespace(ns) + (name,)) else 404)

    @api.delete(base + "/namespaces/{ns}/tables/{name}")
    def drop_table(ns: str, name: str, request: Request):
        ident = namespace(ns) + (name,)
        if request.query_params.get("purgeRequested") == "true":
            catalog.purge_table(ident)
        else:
            catalog.drop_table(ident)
        return Response(status_code=204)

    @api.post(base + "/namespaces/{ns}/register")
    async def register_table(ns: str, request: Request):
        body = RegisterTableRequest.model_validate({"overwrite": False, **(await request.json())})
        return loaded(catalog.register_table(namespace(ns) + (body.name,), body.metadata_location), request=request)

    @api.post(base + "/tables/rename")
    async def rename_table(request: Request):
        body = await request.json()
        source = tuple(body["source"]["namespace"]) + (body["source"]["name"],)
        dest = tuple(body["destination"]["namespace"]) + (body["destination"]["name"],)
        catalog.rename_table(source, dest)
        return Response(status_code=204)

    class Named:
        """What `SqlCatalog.commit_table` needs of the table it commits to: its name."""

        def __init__(self, ident):
            self.ident = ident

        def name(self):
            return self.ident

    def commit(request_body, table_path=None):
        change = CommitTableRequest.model_validate(request_body)
        ident = tuple(change.identifier.namespace.root) + (change.identifier.name,) if table_path is None else table_path
        if not any(isinstance(r, AssertCreate) for r in change.requirements) and not catalog.table_exists(ident):
            raise ex.NoSuchTableError(f"Table does not exist: {'.'.join(ident)}")
        done = catalog.commit_table(Named(ident), change.requirements, change.updates)
        return {
            "metadata-location": done.metadata_location,
            "metadata": json.loads(done.metadata.model_dump_json(by_alias=True, exclude_none=True)),
        }

    @api.post(base + "/namespaces/{ns}/tables/{name}")
    async def commit_table(ns: str, name: str, request: Request):
        body = await request.json()
        body.setdefault("identifier", {"namespace": list(namespace(ns)), "name": name})
        with lock:
            done = commit(body, namespace(ns) + (name,))
            if tokens["fail-next-commit"]:
                tokens["fail-next-commit"] = False
                return error(503, "ServiceUnavailableException", "the commit's answer was lost")
            return done

    @api.post(base + "/transactions/commit")
    async def commit_transaction(request: Request):
        changes = (await request.json())["table-changes"]
        with lock:
            # Every table's requirements first, so that a stale one commits nothing.
            for change in changes:
                parsed = CommitTableRequest.model_validate(change)
                ident = tuple(parsed.identifier.namespace.root) + (parsed.identifier.name,)
                current = catalog.load_table(ident)
                for requirement in parsed.requirements:
                    requirement.validate(current.metadata)
            for change in changes:
                commit(change)
        return Response(status_code=204)

    return api


def server(state, s3_endpoint=None):
    import uvicorn

    port = free_port()
    config = uvicorn.Config(app(state, s3_endpoint), host="127.0.0.1", port=port, log_level="warning")
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    while not running.started:
        if not thread.is_alive():
            raise SystemExit("the adapter did not start")
        threading.Event().wait(0.05)
    print(port, flush=True)
    sys.stdin.read()
    running.should_exit = True
    thread.join(timeout=10)


def read(uri, name, s3_endpoint=None):
    from pyiceberg.catalog import load_catalog

    storage = s3_properties(s3_endpoint) if s3_endpoint else {}
    catalog = load_catalog("adapter", type="rest", uri=uri, credential=f"{CLIENT_ID}:{CLIENT_SECRET}", **storage)
    from rest import print_table  # tests/interop/rest.py, beside this script

    print_table(catalog.load_table(name))


def duckdb_sql(uri, *queries):
    """DuckDB (its iceberg, avro and httpfs extensions from their PyPI packages: DuckDB's own
    INSTALL downloads from its site, which this network does not reach) attaches the catalog
    at URI as `lake` with the adapter's OAuth2 client credentials, runs each query and prints
    its rows as one JSON line. Runs in the interop virtualenv (ICEFLOE_PYTHON)."""
    import glob

    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_httpfs
    import duckdb_extension_iceberg

    con = duckdb.connect()
    for module in (duckdb_extension_avro, duckdb_extension_httpfs, duckdb_extension_iceberg):
        (path,) = glob.glob(f"{os.path.dirname(module.__file__)}/extensions/*/*.duckdb_extension")
        con.execute(f"LOAD '{path}'")
    con.execute(
        f"CREATE SECRET adapter (TYPE iceberg, CLIENT_ID '{CLIENT_ID}', CLIENT_SECRET '{CLIENT_SECRET}', "
        f"OAUTH2_SERVER_URI '{uri}/v1/oauth/tokens')"
    )
    con.execute(f"ATTACH '' AS lake (TYPE iceberg, ENDPOINT '{uri}', SECRET adapter)")
    for query in queries:
        print(json.dumps([list(row) for row in con.execute(query).fetchall()], default=str))


def main(argv):
    command, *args = argv
    {"server": server, "read": read, "duckdb": duckdb_sql}[command](*args)


if __name__ == "__main__":
    main(sys.argv[1:])
