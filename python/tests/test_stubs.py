"""The typing stubs (clampai/_clampai.pyi) against the extension: the same classes, functions,
methods and properties, and for every callable the same parameter names and defaults (each
overload too). Debian has no stubtest; this is the part of it this module needs."""

import ast
import inspect
import re
import types
from pathlib import Path

import clampai
from clampai import _clampai

STUB = Path(clampai.__file__).with_name("_clampai.pyi")
# The special methods the bindings define on purpose (others come from pybind11 itself).
DUNDERS = {"__init__", "__getitem__", "__contains__", "__len__", "__iter__", "__eq__", "__hash__",
           "__bool__"}


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
    """(parameter names, which have defaults) of each overload, from pybind11's docstring."""
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
