"""The type stubs describe the native module as it is."""

import ast
import inspect
from pathlib import Path

import icefloe
from icefloe import _icefloe

STUBS = Path(icefloe.__file__).with_name("_icefloe.pyi")


def stub_parameters(cls, method):
    tree = ast.parse(STUBS.read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    (fn,) = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == method]
    args = fn.args
    names = [a.arg for a in args.posonlyargs + args.args if a.arg not in ("self", "cls")]
    return names, [a.arg for a in args.kwonlyargs]


def native_parameters(function):
    parameters = inspect.signature(function).parameters.values()
    positional = [
        p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return positional, [p.name for p in parameters if p.kind == p.KEYWORD_ONLY]


def test_the_stubs_name_every_parameter_of_open():
    assert stub_parameters("Table", "open") == native_parameters(_icefloe.Table.open)


def test_the_stubs_name_every_parameter_of_read_only():
    assert stub_parameters("Table", "_read_only") == native_parameters(_icefloe.Table._read_only)


def test_the_stubs_name_every_parameter_of_the_catalog():
    for method in ["create", "table", "sql"]:
        native = native_parameters(getattr(_icefloe.Catalog, method))
        if method != "create":
            native = (native[0][1:], native[1])  # `self`
        assert stub_parameters("Catalog", method) == native, method
    assert stub_parameters("Catalog", "__init__") == (["spec"], ["properties"])
    assert inspect.signature(_icefloe.Catalog).parameters.keys() == {"spec", "properties"}


def test_the_package_exports_the_module():
    assert icefloe.Table is _icefloe.Table
    assert icefloe.Catalog is _icefloe.Catalog
    assert issubclass(icefloe.IcefloeError, Exception)
    assert icefloe.__version__ == _icefloe.__version__
