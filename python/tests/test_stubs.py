"""The typing stubs (clampai/_clampai.pyi) against the extension: the same classes, functions,
methods and properties, and for every callable the same parameter names and defaults (each
overload too). Debian has no stubtest; this is the part of it this module needs."""

import ast
import inspect
import re
import types
from pathlib import Path

import pytest

import clampai
from clampai import _clampai

STUB = Path(clampai.__file__).with_name("_clampai.pyi")
# The special methods the bindings define on purpose (others come from pybind11 itself).
DUNDERS = {"__init__", "__getitem__", "__contains__", "__len__", "__iter__", "__eq__", "__hash__",
           "__bool__", "__copy__", "__deepcopy__", "__getstate__", "__setstate__"}


def split_top(text):
    """Splits a parameter list at commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def runtime_signatures(obj, name):
    """(parameter names, which have defaults) of each overload, from pybind11's docstring, or
    of a Python function put on a C++ type (python/clampai/_opaque.py wraps State's)."""
    if inspect.isfunction(obj):
        return {tuple((p.name, p.default is not p.empty)
                      for p in inspect.signature(obj).parameters.values())}
    sigs = set()
    for line in (obj.__doc__ or "").splitlines():
        m = re.match(r"^(?:\d+\. )?" + re.escape(name) + r"\((.*)\) -> ", line)
        if m:
            params = split_top(m.group(1))
            sigs.add(tuple((p.split(":")[0].strip(), "=" in p) for p in params))
    return sigs


def stub_signature(fn: ast.FunctionDef):
    args = fn.args.args
    defaults = [False] * (len(args) - len(fn.args.defaults)) + [True] * len(fn.args.defaults)
    return tuple((a.arg, d) for a, d in zip(args, defaults))


def is_property(fn):
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def stub_tree():
    tree = ast.parse(STUB.read_text())
    classes, functions = {}, {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    kind = "property" if is_property(item) else "method"
                    entry = members.setdefault(item.name, (kind, set()))
                    if kind == "method":
                        entry[1].add(stub_signature(item))
            classes[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            functions.setdefault(node.name, set()).add(stub_signature(node))
    return classes, functions


def test_the_stub_names_every_class_and_function_of_the_module():
    classes, functions = stub_tree()
    runtime_classes = {n for n, v in vars(_clampai).items() if isinstance(v, type)}
    runtime_functions = {n for n, v in vars(_clampai).items()
                         if callable(v) and not isinstance(v, type) and not n.startswith("__")}
    assert set(classes) == runtime_classes
    assert set(functions) == runtime_functions
    for name, sigs in functions.items():
        assert sigs == runtime_signatures(getattr(_clampai, name), name), name


def test_the_stub_describes_every_member_with_its_parameters():
    classes, _ = stub_tree()
    for cls_name, members in classes.items():
        cls = getattr(_clampai, cls_name)
        # A class without a constructor has pybind11's __init__, which only raises.
        runtime = {n: v for n, v in vars(cls).items()
                   if (not n.startswith("__") or n in DUNDERS)
                   and not (n == "__init__" and not runtime_signatures(v, n))}
        assert set(members) == set(runtime), cls_name
        for name, (kind, sigs) in members.items():
            value = runtime[name]
            if kind == "property":
                # A pybind11 property, or a getter of a CPython type (Decision).
                assert isinstance(value, (property, types.GetSetDescriptorType)), \
                    f"{cls_name}.{name} is not a property"
                continue
            assert callable(value), f"{cls_name}.{name}"
            if isinstance(value, types.WrapperDescriptorType):  # a CPython slot (__bool__)
                assert sigs == {(("self", False),)}, f"{cls_name}.{name}"
                continue
            assert sigs == runtime_signatures(value, name), f"{cls_name}.{name}"


def test_the_package_exports_what_it_declares():
    for name in clampai.__all__:
        assert hasattr(clampai, name), name
    public = {n for n, v in vars(clampai).items()
              if not n.startswith("_") and (inspect.isclass(v) or inspect.isfunction(v))
              and getattr(v, "__module__", "").startswith("clampai")}
    assert public <= set(clampai.__all__)


# --- The pure-Python modules' stubs (clampai/*.pyi but _clampai.pyi), checked with inspect ----

PYTHON_STUBS = sorted(p for p in STUB.parent.rglob("*.pyi") if p.name != "_clampai.pyi")


def stub_parameters(fn: ast.FunctionDef):
    """(name, inspect kind, has a default) of each parameter of a stub's function."""
    a = fn.args
    P = inspect.Parameter
    positional = [(x.arg, P.POSITIONAL_ONLY) for x in a.posonlyargs] + \
        [(x.arg, P.POSITIONAL_OR_KEYWORD) for x in a.args]
    first_default = len(positional) - len(a.defaults)
    out = [(n, k, i >= first_default) for i, (n, k) in enumerate(positional)]
    if a.vararg:
        out.append((a.vararg.arg, P.VAR_POSITIONAL, False))
    out += [(x.arg, P.KEYWORD_ONLY, d is not None) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, P.VAR_KEYWORD, False))
    return out


def runtime_parameters(fn):
    return [(p.name, p.kind, p.default is not inspect.Parameter.empty)
            for p in inspect.signature(fn).parameters.values()]


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def check_function(stub: ast.FunctionDef, runtime, where: str):
    assert callable(runtime), f"{where} is not callable"
    assert stub_parameters(stub) == runtime_parameters(runtime), where
    assert isinstance(stub, ast.AsyncFunctionDef) == inspect.iscoroutinefunction(runtime), \
        f"{where}: async in one and not the other"


def check_class(node: ast.ClassDef, cls, where: str):
    assert inspect.isclass(cls), f"{where} is not a class"
    for item in node.body:
        if isinstance(item, FUNCTIONS):
            value = inspect.getattr_static(cls, item.name, None)
            assert value is not None, f"{where}.{item.name} is missing"
            if is_property(item):
                assert isinstance(value, property), f"{where}.{item.name} is not a property"
            else:
                check_function(item, getattr(cls, item.name), f"{where}.{item.name}")
        elif isinstance(item, ast.AnnAssign):
            name = item.target.id
            if issubclass(cls, __import__("enum").Enum):
                assert name in cls.__members__, f"{where}.{name} is not a member"
            else:
                # A field: a class attribute, a dataclass field or set by __init__.
                fields = getattr(cls, "__dataclass_fields__", {})
                assert hasattr(cls, name) or name in fields or re.search(
                    rf"self\.{name}(: [^=]+)? = ", inspect.getsource(cls.__init__)), \
                    f"{where}.{name}"


def test_the_python_modules_stubs_match_the_modules():
    import importlib

    assert {p.name for p in PYTHON_STUBS} >= {"_reference_api.pyi", "invariants.pyi", "_reasoning.pyi",
                                             "_inverse.pyi", "_composition.pyi",
                                             "_barriers.pyi"}
    for path in PYTHON_STUBS:
        parts = path.relative_to(STUB.parent).with_suffix("").parts
        package = parts[:-1]  # where `from .x import` looks (the stub's own package)
        dotted = ".".join(package if parts[-1] == "__init__" else parts)
        module = importlib.import_module(f"clampai.{dotted}")
        tree = ast.parse(path.read_text())
        named = set()
        for node in tree.body:
            if isinstance(node, FUNCTIONS):
                named.add(node.name)
                check_function(node, getattr(module, node.name, None), f"{path.stem}.{node.name}")
            elif isinstance(node, ast.ClassDef):
                named.add(node.name)
                check_class(node, getattr(module, node.name, None), f"{path.stem}.{node.name}")
            elif isinstance(node, ast.AnnAssign):
                named.add(node.target.id)
                assert hasattr(module, node.target.id), f"{path.stem}.{node.target.id}"
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
                # `__all__ = [...]`: the module's own list, name for name.
                (target,) = node.targets
                assert target.id == "__all__", f"{path.stem}.{target.id}"
                assert sorted(ast.literal_eval(node.value)) == sorted(module.__all__), path.name
            elif isinstance(node, ast.Assign):
                (target,) = node.targets
                named.add(target.id)
                assert getattr(module, target.id) is getattr(module, node.value.id)
            elif isinstance(node, ast.ImportFrom) and node.level == 1:
                # A re-export (`from .sub import Name as Name`): the same object at both places.
                source = importlib.import_module(".".join(("clampai", *package, node.module)))
                for alias in node.names:
                    if alias.asname == alias.name:
                        named.add(alias.name)
                        assert getattr(module, alias.name) is getattr(source, alias.name), \
                            f"{path.stem}.{alias.name}"
        public = set(getattr(module, "__all__", ())) - {"__all__"}
        assert public <= named, f"{path.name} lacks {sorted(public - named)}"


def test_the_stub_checker_catches_a_wrong_signature():
    tree = ast.parse("def make_action(name: str, cost: float, *, reversible: bool = ...): ...")
    with pytest.raises(AssertionError):
        check_function(tree.body[0], clampai.make_action, "make_action")
    tree = ast.parse("async def make_state(**variables): ...")
    with pytest.raises(AssertionError, match="async"):
        check_function(tree.body[0], clampai.make_state, "make_state")
