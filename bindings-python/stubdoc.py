"""Carries the compiled module's docstrings into its type stub.

The Rust doc comments of bindings-python/src become the `__doc__` of every
class, function, method and property of `plimsoll._native`, which `help()`
shows; IDEs read the stub instead. This writes those docstrings into
`python/plimsoll/_native.pyi`, so both say the same:

    python stubdoc.py --write   # rewrite the stub's docstrings from the built module
    python stubdoc.py --check   # CI: fail when the stub's docstrings differ from the
                                # module's, or a public item has none

Run it with the virtualenv that has the built module (bindings-python/test.sh).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

STUB = Path(__file__).parent / "python" / "plimsoll" / "_native.pyi"


def runtime_doc(owner: object, name: str) -> str | None:
    """The docstring the compiled module gives `owner.name`, cleaned, or None."""
    obj = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name, None)
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    if isinstance(obj, type) and doc == getattr(obj.__base__, "__doc__", None):
        return None  # inherited, not its own
    return inspect.cleandoc(doc)


def literal(doc: str, indent: str) -> list[str]:
    """The docstring as source lines at `indent`."""
    text = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.split("\n")
    if len(lines) == 1:
        return [f'{indent}"""{text}"""']
    out = [f'{indent}"""{lines[0]}']
    out += [f"{indent}{line}" if line else "" for line in lines[1:]]
    out.append(f'{indent}"""')
    return out


# The results part is rendered, docstrings included, from plimsoll-core's
# tables (plimsoll-core/src/view/render.rs; the core's tests compare it), so it
# is theirs, not the compiled module's.
RENDERED = ("# " + "-" * 64 + " results", "# " + "-" * 64 + " verification")


def rendered_lines(source: str) -> range:
    """The 1-based line numbers of the part rendered from the core's tables."""
    lines = source.split("\n")
    start, end = (lines.index(marker) + 1 for marker in RENDERED)
    return range(start, end + 1)


def items(tree: ast.Module, module: object, skip: range = range(0)):
    """(node, docstring wanted, qualified name) for every public def and class outside `skip`."""
    for node in tree.body:
        if node.lineno in skip:
            continue
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            yield node, runtime_doc(module, node.name), node.name
            if isinstance(node, ast.ClassDef):
                cls = getattr(module, node.name, None)
                for sub in node.body:
                    if isinstance(sub, ast.FunctionDef) and not sub.name.startswith("_") and cls is not None:
                        yield sub, runtime_doc(cls, sub.name), f"{node.name}.{sub.name}"


def rewrite(source: str, module: object) -> str:
    """The stub with every item's docstring set to the module's."""
    tree = ast.parse(source)
    lines = source.split("\n")
    edits: list[tuple[int, int, list[str]]] = []  # (start, end) 0-based line span → lines
    for node, doc, _ in items(tree, module, rendered_lines(source)):
        if doc is None:
            continue
        indent = " " * (node.col_offset + 4)
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            edits.append((first.lineno - 1, first.end_lineno or first.lineno, literal(doc, indent)))
        elif isinstance(first, ast.Expr) and first.value.__class__ is ast.Constant and first.value.value is Ellipsis \
                and first.lineno == (node.body[-1].end_lineno or 0) and len(node.body) == 1:
            # `def f(…) -> T: ...` or `class C(B): ...` on the signature's last line.
            at = first.lineno - 1
            line = lines[at]
            head = (line[: first.col_offset] + line[first.end_col_offset or 0 :]).rstrip()
            edits.append((at, at + 1, [head, *literal(doc, indent)]))
        else:
            at = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))]) - 1
            edits.append((at, at, literal(doc, indent)))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    return "\n".join(lines)


def problems(source: str, module: object) -> list[str]:
    """What --check reports: items without a docstring, or with another than the module's."""
    out = []
    for node, doc, name in items(ast.parse(source), module, rendered_lines(source)):
        have = ast.get_docstring(node, clean=True)
        if doc is None and have is None:
            out.append(f"{name}: no docstring in the compiled module (a Rust doc comment) or the stub")
        elif doc is not None and have != doc:
            out.append(f"{name}: the stub's docstring differs from the module's (run stubdoc.py --write)")
    return out


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) == 2 else ""
    if mode not in ("--write", "--check"):
        print(__doc__, file=sys.stderr)
        return 2
    module = importlib.import_module("plimsoll._native")
    source = STUB.read_text()
    if mode == "--write":
        STUB.write_text(rewrite(source, module))
        source = STUB.read_text()
    found = problems(source, module)
    for p in found:
        print(f"{STUB.name}: {p}", file=sys.stderr)
    checked = sum(1 for _ in items(ast.parse(source), module, rendered_lines(source)))
    print(f"stubdoc: {checked} items checked ({len(rendered_lines(source))} rendered lines are the core's), {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
