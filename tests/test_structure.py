"""The house's structure, read from the code with ``ast``: imports point one way, no circles, no private names
taken from another module, formats/ free of encodings/ and everything above, system/ on errors alone, nothing
imports the CLI, no module over 600 lines, no module named like a standard-library module.

Every import counts, at module level or inside a function (a lazy import is still a dependency; hiding a circle in
a function was how the old cli modules got by), except under ``if TYPE_CHECKING:`` and ``if __name__ ==
"__main__":`` (a module run as a script is not imported).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "posenc_cli"
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def resolve(importer: str, level: int, module: str | None) -> str:
    """The absolute name of ``from <level dots><module> import ...`` inside ``importer``."""
    if level == 0:
        return module or ""
    base = importer.split(".")
    base = base if is_package(importer) else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def type_checking_nodes(tree: ast.AST) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        test = ast.unparse(node.test) if isinstance(node, ast.If) else ""
        if "TYPE_CHECKING" in test or test in ("__name__ == '__main__'", '__name__ == "__main__"'):
            hidden.update(id(n) for n in ast.walk(node))
    return hidden


def imports(name: str) -> Iterator[tuple[str, str | None, int]]:
    """``(module imported, name taken from it or None, line)`` for every posenc import of module ``name``."""
    tree = ast.parse(MODULES[name].read_text())
    hidden = type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("posenc_cli"):
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = resolve(name, node.level, node.module)
            if not target.startswith("posenc_cli"):
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in MODULES:
                    yield submodule, None, node.lineno  # a module of a package: its dependency is that module
                else:
                    yield target, alias.name, node.lineno
        elif isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "REGISTRY" and node.value is not None:
            # posenc_cli.kinds' registry names the module of each kind, which it imports by that name when the kind
            # is asked for (importlib): each is a dependency as an import statement would be.
            for entry in ast.literal_eval(node.value).values():
                yield f"{name}.{entry[0]}", None, node.lineno


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for name in MODULES:
        for target, _, _ in imports(name):
            if target != name and target in MODULES:
                edges[name].add(target)
    return edges


def package_of(name: str) -> str:
    return name if is_package(name) else name.rpartition(".")[0]


def test_the_reader_sees_the_package():
    assert {"posenc_cli", "posenc_cli.cli", "posenc_cli.kinds", "posenc_cli.formats.c"} <= set(MODULES)
    assert "posenc_cli.kinds.rope" in {target for target, _, _ in imports("posenc_cli.kinds")}
    assert ("posenc_cli.formats", "FORMATS") in {(t, taken) for t, taken, _ in imports("posenc_cli.kinds._shared")}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``edges`` (excluding a package importing its own submodules, which is how packages are built,
    and a submodule using its package's ``__init__`` only through the others), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if is_package(nxt) and node.startswith(nxt + "."):
                continue  # a submodule importing its package's namespace is flagged below, not a cycle edge
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_no_import_circle():
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_a_submodule_never_imports_its_own_package():
    """``from . import x`` inside a package is fine; taking a name from the package's ``__init__`` (which imports
    the submodules) is a circle in disguise."""
    for name in MODULES:
        for target, taken, line in imports(name):
            if target != name and is_package(target) and name.startswith(target + ".") and taken is not None:
                if f"{target}.{taken}" not in MODULES:
                    pytest.fail(f"{name}:{line} takes {taken} from its own package {target}")


def test_no_private_name_is_imported_from_another_module():
    for name in MODULES:
        for target, taken, line in imports(name):
            if taken is not None and taken.startswith("_") and not taken.startswith("__") and target != name:
                pytest.fail(f"{name}:{line} imports the private name {taken} from {target}")


def test_no_private_attribute_of_another_posenc_module_is_used():
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = resolve(name, node.level, node.module)
                for alias in node.names:
                    if f"{target}.{alias.name}" in MODULES:
                        aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                attr = node.attr
                if attr.startswith("_") and not attr.startswith("__"):
                    pytest.fail(
                        f"{name}:{node.lineno} uses {node.value.id}.{attr}, private to {aliases[node.value.id]}"
                    )


#: What formats/ stands on: itself, the system layer, and the shared values (errors, Table, element types,
#: parameter records, the version every file records). Everything else is above it (encodings, kinds, the API, the
#: manifest, the desk, the CLI): an allowlist, so that a layer added later is above formats/ without a word here.
FORMATS_STAND_ON = ("posenc_cli.formats", "posenc_cli.system", "posenc_cli.errors", "posenc_cli.table",
                    "posenc_cli.dtypes", "posenc_cli.params", "posenc_cli._version",
                    "posenc_cli._native")  # fmt: skip


def within(name: str, packages: tuple[str, ...]) -> bool:
    """Whether module ``name`` is one of ``packages`` or inside one."""
    return name in packages or name.startswith(tuple(f"{package}." for package in packages))


def test_formats_never_import_encodings_or_anything_above_them():
    for name in MODULES:
        if not name.startswith("posenc_cli.formats"):
            continue
        for target, _, line in imports(name):
            assert within(target, FORMATS_STAND_ON), f"{name}:{line} imports {target}"


def test_the_system_layer_stands_on_errors_alone():
    """system/ (atomic replace, signals, available memory and disk, opening a regular file) knows no table, kind or
    format: it imports nothing of posenc but errors, so every layer above (formats for the memory a read may take,
    the API and the CLI for outputs) can use it without a circle."""
    for name in MODULES:
        if name.startswith("posenc_cli.system"):
            for target, _, line in imports(name):
                assert within(target, ("posenc_cli.system", "posenc_cli.errors")), f"{name}:{line} imports {target}"


def test_encodings_are_pure_math():
    # _native: which compiled core runs, and how many threads (it stands on errors alone)
    allowed = ("posenc_cli.encodings", "posenc_cli.dtypes", "posenc_cli.errors", "posenc_cli.table")
    allowed += ("posenc_cli._native",)
    for name in MODULES:
        if name.startswith("posenc_cli.encodings"):
            for target, _, line in imports(name):
                assert target.startswith(allowed), f"{name}:{line} imports {target}"


def test_nothing_imports_the_cli():
    for name in MODULES:
        if name.startswith("posenc_cli.cli") or name == "posenc_cli._entry":
            continue
        for target, _, line in imports(name):
            assert not target.startswith("posenc_cli.cli"), f"{name}:{line} imports {target}"


def test_nothing_imports_the_deprecated_build_module():
    """posenc_cli.build only re-exports posenc_cli.manifest for old imports, and warns when imported: a module of
    posenc that imported it would warn on every run."""
    for name in MODULES:
        for target, _, line in imports(name):
            assert target != "posenc_cli.build", f"{name}:{line} imports {target}"


def test_click_and_rich_stay_in_the_cli():
    for name, path in MODULES.items():
        if name.startswith("posenc_cli.cli") or name in ("posenc_cli._cli_types", "posenc_cli.plot"):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for imported in names:
                assert imported.split(".")[0] not in ("click", "rich"), f"{name}:{node.lineno} imports {imported}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_over_600_lines(name):
    lines = MODULES[name].read_text().count("\n")
    assert lines <= MAX_LINES, f"{MODULES[name].relative_to(PACKAGE.parent)} has {lines} lines"


#: Modules that may keep a standard-library name, each with the reason it cannot shadow that module.
STDLIB_NAMES_KEPT = {
    # Python imports its own encodings package while it starts, before a script's folder joins sys.path
    # (test_a_kept_standard_library_name_cannot_shadow_its_module), and `import encodings` finds it in sys.modules.
    # Renaming the layer is the kinds half of issue #26's call: every kind and maker imports it.
    "posenc_cli.encodings": "encodings",
}


def stdlib_named(names: list[str]) -> list[str]:
    """The modules of ``names`` whose own name is a standard-library module's (``posenc_cli.inspect``)."""
    return [name for name in names if name.rpartition(".")[2] in sys.stdlib_module_names]


def test_no_module_is_named_like_a_standard_library_module():
    """A script run from inside the package (``python posenc_cli/x.py``) has that folder first on sys.path: a module
    there named like one of the standard library's is what ``import <name>`` gets, for the script and for every
    library it imports. posenc_cli/inspect.py broke ``import dataclasses`` that way (now describe.py); csv.py is
    csvfile.py, system/ is not io/ for the same reason."""
    assert [name for name in stdlib_named(sorted(MODULES)) if name not in STDLIB_NAMES_KEPT] == []
    assert stdlib_named(["posenc_cli.inspect", "posenc_cli.formats.csv", "posenc_cli.io", "posenc_cli.describe"]) == [
        "posenc_cli.inspect", "posenc_cli.formats.csv", "posenc_cli.io"]  # fmt: skip


def test_a_kept_standard_library_name_cannot_shadow_its_module():
    import subprocess

    for name, stdlib in STDLIB_NAMES_KEPT.items():
        assert name in MODULES and stdlib in sys.stdlib_module_names
        code = f"import sys; print({stdlib!r} in sys.modules)"  # before the script's first line: -S, no site
        loaded = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
        assert loaded.stdout == "True\n", name


def test_the_checks_can_fail():
    """The cycle finder and the import reader catch what they are for, on a made-up graph."""
    edges = {"posenc_cli.kinds": {"posenc_cli.make"}, "posenc_cli.make": {"posenc_cli.kinds"}}
    global is_package
    real = is_package
    try:
        is_package = lambda name: False  # noqa: E731
        assert find_cycle(edges) == ["posenc_cli.kinds", "posenc_cli.make", "posenc_cli.kinds"]
        assert find_cycle({"posenc_cli.kinds": {"posenc_cli.make"}, "posenc_cli.make": set()}) is None
    finally:
        is_package = real


def test_the_shared_values_stand_on_nothing_but_errors():
    """The values every layer passes (a Table, an element type, a parameter record and its range) depend on no
    layer: each imports only errors, and a parameter record the element types (the registry's ``dtype`` value type
    is the element type's rule) and the range its type may carry."""
    shared = ("posenc_cli.table", "posenc_cli.dtypes", "posenc_cli.params", "posenc_cli.ranges", "posenc_cli.errors")
    for name in shared:
        for target, _, line in imports(name):
            allowed = {"posenc_cli.errors"}
            if name == "posenc_cli.params":
                allowed |= {"posenc_cli.dtypes", "posenc_cli.ranges"}
            assert target in allowed, f"{name}:{line} imports {target}"


def test_no_module_of_the_package_is_ignored_by_git():
    """A .gitignore line (``build/``) once kept posenc_cli/build/ (now manifest/) out of every clean clone."""
    import shutil
    import subprocess

    root = PACKAGE.parent
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    paths = [str(p.relative_to(root)) for p in MODULES.values()]
    ignored = subprocess.run(["git", "check-ignore", *paths], cwd=root, capture_output=True, text=True).stdout
    assert ignored.split() == []


def test_every_package_is_declared_for_installation():
    import re

    declared = re.search(r"^packages = \[(.*?)\]", (PACKAGE.parent / "pyproject.toml").read_text(), re.M)
    assert declared is not None
    packages = {name.strip(' "') for name in declared.group(1).split(",")}
    assert packages == {name for name in MODULES if is_package(name)}


# ------------------------------------------------------------------------------------- a kind is one module
def test_the_encodings_are_imported_by_the_kinds_and_identify_alone():
    """The math of a kind is reached through its kind (its parameters checked there, once) or by ``identify``, which
    reads tables with it; the API publishes the one engine function users call directly (``sinusoidal``)."""
    allowed = ("posenc_cli.encodings", "posenc_cli.kinds", "posenc_cli.identification")
    for name in MODULES:
        if name.startswith(allowed):
            continue
        for target, _, line in imports(name):
            if target.startswith("posenc_cli.encodings"):
                assert (name, target) == ("posenc_cli.api", "posenc_cli.encodings.sinusoidal"), (
                    f"{name}:{line} imports {target}"
                )


def kind_flags() -> set[str]:
    """The flags of the kinds' own parameters (not those every command shares: ``--key`` is ``convert``'s too)."""
    from posenc_cli.kinds import CONVERT, ELEMENT, KINDS, OUTPUT, RUN

    shared = {p.flag for p in (*CONVERT, *ELEMENT, *OUTPUT, *RUN)}
    return {p.flag for kind in KINDS.values() for p in kind.params} - shared


def test_no_module_outside_the_kinds_declares_a_parameter():
    """A parameter is declared once, in its kind's module (or, shared by every kind, in the kinds' ``_shared``):
    nowhere else is a :class:`~posenc_cli.params.Param` made, or a click option spelled with a kind's flag (the
    options are made from the registry, :mod:`posenc_cli.cli.options`)."""
    flags = kind_flags()
    for name, path in MODULES.items():
        if name.startswith("posenc_cli.kinds") or name == "posenc_cli.params":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            called = ast.unparse(node.func)
            assert called != "Param", f"{name}:{node.lineno} declares a parameter"
            if called.endswith("option"):
                spelled = {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
                assert not spelled & flags, f"{name}:{node.lineno} spells a kind's option {spelled & flags}"


def test_no_module_is_named_like_a_name_of_the_package():
    """A submodule named like a name the package exports (``posenc_cli.convert``, the function) would replace that
    name on the package once imported: ``posenc_cli.convert(...)`` would call a module."""
    import posenc_cli

    for name in MODULES:
        top = name.split(".")
        if len(top) == 2:
            assert top[1] not in posenc_cli.__all__, f"{name} shadows posenc_cli.{top[1]}"


def test_a_kinds_module_is_its_kind():
    """Each module of ``kinds/`` (but the shared and private ones, the RoPE config reader and the runtimes'
    layouts) ends with its ``KIND``, and the registry lists exactly those modules' kinds."""
    import importlib

    from posenc_cli.kinds import KINDS

    public = [n for n in MODULES if n.startswith("posenc_cli.kinds.") and not n.rsplit(".", 1)[1].startswith("_")]
    public = [n for n in public if not n.startswith("posenc_cli.kinds.runtimes")]  # RoPE's layouts, no kinds
    kinds = [importlib.import_module(n) for n in public if n != "posenc_cli.kinds.rope_config"]
    assert sorted(m.KIND.command for m in kinds) == sorted(KINDS)
    for module in kinds:
        assert KINDS[module.KIND.command] is module.KIND
        assert module.KIND.make.__module__ == module.__name__  # the maker lives with its kind
