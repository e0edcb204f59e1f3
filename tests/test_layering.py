"""The package's layers (docs: architecture): a module imports only modules of its own layer or of
layers below it, lazy imports inside functions included, and no modules import each other in a cycle.
Checked on the source (AST), so it holds for code paths no other test runs."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "procrl"
LAYERS = ["core", "data", "models", "rewards", "recipe", "observe", "trainers", "evaluation", "engines", "launch"]
LAYER_OF_MODULE = {
    "procrl": 0,
    "procrl.testing": 0,
    "procrl.testing.openai_server": 0,
}  # test double: imports no procrl
# Thin entry points at public paths (``python -m procrl``, ``python -m procrl.run``, ``procrl.trl`` for TRL
# scripts, ``procrl/verl.py`` for verl's custom_reward_function): they may import
# any layer, and nothing in procrl imports them. (procrl.rewards, the custom rewards' import, re-exports
# its own layer and core only: an ordinary rewards module here.)
SHIMS = {"procrl.__main__", "procrl.run", "procrl.trl", "procrl.verl"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The procrl modules ``name`` imports anywhere in its file (the most specific module a name resolves to)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    resolved = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target.startswith("procrl") and target != name:
            resolved.add(target)
    return resolved


def _layer(name: str) -> int:
    if name in LAYER_OF_MODULE:
        return LAYER_OF_MODULE[name]
    parts = name.split(".")
    assert len(parts) > 1 and parts[1] in LAYERS, (
        f"{name} lies in no layer: move it into one of procrl/{{{','.join(LAYERS)}}}/"
    )
    return LAYERS.index(parts[1])


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_modules_import_only_their_layer_or_below():
    upward = [
        f"{name} ({LAYERS[_layer(name)]}) imports {target} ({LAYERS[_layer(target)]})"
        for name, targets in sorted(_graph().items())
        if name not in SHIMS
        for target in sorted(targets)
        if target in SHIMS or _layer(target) > _layer(name)
    ]
    assert not upward, "imports against the layers (a shim counts as above everything):\n" + "\n".join(upward)


def test_no_import_cycles():
    graph, index, low, stack, cycles = _graph(), {}, {}, [], []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while not component or node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                cycles.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == [], "modules that import each other"
