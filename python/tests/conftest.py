"""Servers the tests need, started on 127.0.0.1 by the launchers the Rust tests use
(tests/interop/s3.py: moto's S3 server; tests/interop/rest.py: lakana-server, a REST catalog
icefloe did not write), each with the Python .ci/run installed it into (ICEFLOE_PYTHON,
ICEFLOE_REST_PYTHON). A launcher prints its port and stops its server when its standard input
closes; without the variable the tests that need it are skipped, saying they were NOT run
(`pytest -rs` prints why)."""

import os
import subprocess
import threading
from pathlib import Path

import pytest

INTEROP = Path(__file__).resolve().parents[2] / "tests" / "interop"


def launch(variable, script, args, wait_seconds, check_import=None):
    """Starts `script` with the Python `variable` names; yields its port, then stops it."""
    python = os.environ.get(variable)
    if not python:
        pytest.skip(f"{variable} is not set (.ci/run sets it up): these checks were NOT run")
    if check_import:
        found = subprocess.run([python, "-c", f"import {check_import}"], capture_output=True)
        if found.returncode != 0:
            pytest.skip(f"{python} has no {check_import}: these checks were NOT run")
    proc = subprocess.Popen(
        [python, str(INTEROP / script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(wait_seconds)
    try:
        if not line or not line[0].strip().isdigit():
            raise RuntimeError(f"{script} did not print its port within {wait_seconds} s: {line}")
        yield int(line[0])
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def s3_endpoint():
    """moto's S3 server: its endpoint."""
    for port in launch("ICEFLOE_PYTHON", "s3.py", ["server"], 60, check_import="moto.server"):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def lakana(tmp_path_factory):
    """lakana-server: its URI and the client properties that reach it (rest.py's token, the
    `dev` environment as prefix)."""
    state = tmp_path_factory.mktemp("lakana")
    for port in launch("ICEFLOE_REST_PYTHON", "rest.py", ["server", str(state)], 180):
        uri = f"http://127.0.0.1:{port}"
        token = "lakana_pat_0123456789abcdef_icefloe-test-secret-0123456789ab"
        yield uri, {"uri": uri, "token": token, "prefix": "dev"}
