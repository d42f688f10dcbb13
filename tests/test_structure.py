"""The package's structure: no import circle, and the shipped package holds only the crawler."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "crawlproj"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports, at the top or inside a function."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and target != "crawlproj":
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, set(paths)) for name, path in paths.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_in_the_package():
    assert circles(import_graph()) == []


def test_the_settings_core_is_a_leaf():
    graph = import_graph()
    assert graph["crawlproj.errors"] == set()
    assert graph["crawlproj.checks"] <= {"crawlproj.errors"}
    assert graph["crawlproj.defaults"] <= {"crawlproj.checks"}


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_crawl_process_loads_nothing_only_other_commands_or_unlisted_extensions_need():
    """Scrapy imports every command module to list the commands, and every extension a crawl lists
    to compare their names: the report's matplotlib (0.7 CPU-s a crawl process, once) and the
    remote control's aiohttp must not come with them."""
    code = ("import sys\n"
            "from scrapy.cmdline import _get_commands_dict\n"
            "from scrapy.utils.project import get_project_settings\n"
            "settings = get_project_settings()\n"
            "assert 'report' in _get_commands_dict(settings, inproject=True)\n"
            "settings.getwithbase('EXTENSIONS')\n"
            "print(sorted(m for m in ('matplotlib', 'aiohttp', 'twisted.conch') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


def test_every_exception_is_declared_in_errors_with_the_common_base():
    """crawlproj's exceptions live in crawlproj/errors.py, each a CrawlprojError, so a caller can
    catch what crawlproj raises apart from its libraries' errors, and a reader finds them all."""
    import inspect

    import crawlproj.errors as errors

    declared = {name for name, value in vars(errors).items()
                if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == errors.__name__}
    assert declared and all(issubclass(getattr(errors, name), errors.CrawlprojError) for name in declared)
    elsewhere = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception", "Timeout", "Refused", "Failed"))
                                                  or b.id in ("IgnoreRequest", "DropItem", "NotConfigured")))
                    for b in node.bases):
                elsewhere.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert not elsewhere, f"declare these in crawlproj/errors.py: {elsewhere}"


def test_the_engine_s_private_slot_is_read_only_in_engine_state():
    reads = [f"{path.relative_to(PACKAGE)}" for path in PACKAGE.rglob("*.py")
             if path.name != "engine_state.py" and '"_slot"' in path.read_text(encoding="utf-8")]
    assert not reads, f"ask crawlproj/engine_state.py instead: {reads}"


def _meta_keys(tree: ast.AST) -> set[str]:
    """The string keys a module reads or sets in a request's ``meta``."""
    def is_meta(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "meta") or (isinstance(node, ast.Name) and node.id == "meta")

    keys = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_meta(node.value) and isinstance(node.slice, ast.Constant):
            keys.append(node.slice.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_meta(node.func.value)
              and node.func.attr in ("get", "setdefault", "pop") and node.args and isinstance(node.args[0], ast.Constant)):
            keys.append(node.args[0].value)
        elif (isinstance(node, ast.Compare) and len(node.comparators) == 1 and is_meta(node.comparators[0])
              and isinstance(node.left, ast.Constant) and isinstance(node.ops[0], (ast.In, ast.NotIn))):
            keys.append(node.left.value)
        elif isinstance(node, ast.keyword) and node.arg == "meta" and isinstance(node.value, ast.Dict):
            keys += [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    # (a PDF's own metadata, read into a dict also called meta, has capitalised keys)
    return {k for k in keys if isinstance(k, str) and k == k.lower()}


def test_every_request_meta_key_is_named_in_crawlproj_meta():
    from crawlproj.meta import OURS, THEIRS

    used: dict[str, str] = {}
    for path in PACKAGE.rglob("*.py"):
        for key in _meta_keys(ast.parse(path.read_text(encoding="utf-8"))):
            used.setdefault(key, str(path.relative_to(PACKAGE)))
    unnamed = {k: where for k, where in used.items() if k not in OURS and k not in THEIRS}
    assert not unnamed, f"name these meta keys in crawlproj/meta.py: {unnamed}"
    assert _meta_keys(ast.parse('r.meta["x_y"]; Request(meta={"z": 1}); "w" in r.meta')) == {"x_y", "z", "w"}
