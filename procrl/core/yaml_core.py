"""The one YAML loader of procrl: recipes, ``--set`` values and the start-up hook all read YAML
here, with YAML 1.2 core-schema scalars and a bound on alias expansion.

PyYAML implements YAML 1.1, where ``on``/``off``/``yes``/``no`` are booleans (so the documented
``gate: {on: accuracy}`` became ``gate: {True: accuracy}``), ``1e-4`` is a string (1.1 floats need
a dot), ``010`` is octal and ``2024-01-01`` a date. Under the YAML 1.2 core schema, which this
loader follows, only these plain scalars are not strings:

* null: ``~``, ``null``, ``Null``, ``NULL``, empty;
* bool: ``true``/``True``/``TRUE``, ``false``/``False``/``FALSE``;
* int: ``[-+]?[0-9]+``, ``0o[0-7]+``, ``0x[0-9a-fA-F]+`` (``010`` is ten);
* float: ``[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?`` (``1e-4``, ``1.0e-4``, ``.5``),
  ``.inf``, ``-.inf``, ``.nan`` (any case as the spec lists).

Everything else (``on``, ``yes``, ``2024-01-01``, ``1_000``) is a string. Merge keys (``<<``) keep
working. Aliases are expanded only after the document's expanded size has been counted on the
node graph: a document whose aliases would expand to more than :data:`MAX_NODES` nodes (an
"alias bomb": a 1.6 KB file can expand to gigabytes) is refused before anything is built, and so
is one nested more than :data:`MAX_DEPTH` levels deep (PyYAML's composer recurses per level:
5,000 levels ended in a RecursionError).

A key given twice in one mapping is refused (:class:`DuplicateKeyError`, naming both lines):
PyYAML keeps the last one silently, so a second ``rewards:`` section dropped the first one's
components. Keys merged in with ``<<`` may be overridden, as YAML intends.

:func:`dump` writes YAML that reads back the same under both schemas (strings that either one
would take for another type are quoted).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["MAX_DEPTH", "MAX_NODES", "CoreLoader", "DuplicateKeyError", "YAMLSizeError", "dump", "load"]

MAX_NODES = 100_000  # expanded nodes per document; procrl's largest recipe has ~150
MAX_DEPTH = 100  # nesting levels per document; procrl's deepest recipe has 4

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_RESOLVERS = [
    ("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", _BOOL, list("tTfF")),
    ("tag:yaml.org,2002:int", _INT, list("-+0123456789")),
    ("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789")),
    ("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"]),
]


class YAMLSizeError(yaml.YAMLError):
    """The document's aliases expand beyond :data:`MAX_NODES` nodes (or refer to themselves)."""


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping gives the same key twice; ``problem_mark`` is the second occurrence."""


class CoreLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core-schema scalar resolution, a bound on nesting
    depth and no duplicate keys."""

    yaml_implicit_resolvers: dict = {}
    _depth = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise YAMLSizeError(
                f"line {mark.line + 1}: YAML nested more than {MAX_DEPTH} levels deep; refusing to load"
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                if key in first_line:
                    raise DuplicateKeyError(
                        None,
                        None,
                        f"duplicate key {key!r}: first at line {first_line[key]}, again at line {line}; "
                        "give each key once (YAML would keep only the last)",
                        key_node.start_mark,
                    )
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_bool(self, node):
        return self.construct_scalar(node).lower() == "true"

    def construct_yaml_int(self, node):
        value = self.construct_scalar(node)
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        return int(value)

    def construct_yaml_float(self, node):
        value = self.construct_scalar(node).lower()
        if value.endswith(".inf"):
            return float("-inf") if value.startswith("-") else float("inf")
        if value == ".nan":
            return float("nan")
        return float(value)


for _tag, _regexp, _first in _RESOLVERS:
    CoreLoader.add_implicit_resolver(_tag, _regexp, _first)
CoreLoader.add_constructor("tag:yaml.org,2002:bool", CoreLoader.construct_yaml_bool)
CoreLoader.add_constructor("tag:yaml.org,2002:int", CoreLoader.construct_yaml_int)
CoreLoader.add_constructor("tag:yaml.org,2002:float", CoreLoader.construct_yaml_float)


def expanded_size(node: yaml.Node, limit: int = MAX_NODES) -> int:
    """Nodes of the document with every alias expanded, counted on the node graph (an alias is
    the same node object as its anchor, so each distinct node is visited once); raises
    :class:`YAMLSizeError` above ``limit`` or for a node that contains itself."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()

    def size(current: yaml.Node) -> int:
        key = id(current)
        if key in sizes:
            return sizes[key]
        if key in in_progress:
            raise YAMLSizeError("a YAML alias refers to a node that contains it (recursive structure)")
        in_progress.add(key)
        total = 1
        if isinstance(current, yaml.SequenceNode):
            for child in current.value:
                total += size(child)
                if total > limit:
                    break
        elif isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                total += size(key_node) + size(value_node)
                if total > limit:
                    break
        in_progress.discard(key)
        if total > limit:
            raise YAMLSizeError(f"YAML aliases expand to more than {limit:,} nodes (an alias bomb?); refusing to load")
        sizes[key] = total
        return total

    return size(node)


def load(text: str) -> Any:
    """One YAML document, YAML 1.2 core schema, alias expansion bounded (:class:`YAMLSizeError`)."""
    loader = CoreLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded_size(node)
        try:
            return loader.construct_document(node)
        except (ValueError, TypeError) as error:  # e.g. an explicit !!int tag on a non-integer
            raise yaml.constructor.ConstructorError(None, None, str(error), node.start_mark) from None
    finally:
        loader.dispose()


class _Dumper(yaml.SafeDumper):
    """Quotes a string whenever YAML 1.1 (PyYAML, other tools) or 1.2 (procrl) would read it as
    something else: the 1.1 resolvers are the SafeDumper's own, the 1.2 ones are added."""

    yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeDumper.yaml_implicit_resolvers.items()}


for _tag, _regexp, _first in _RESOLVERS:
    _Dumper.add_implicit_resolver(_tag, _regexp, _first)


def dump(data: Any, **kwargs: Any) -> str:
    """``yaml.safe_dump`` whose output reads back identically under YAML 1.1 and 1.2."""
    kwargs.setdefault("sort_keys", False)
    return yaml.dump(data, Dumper=_Dumper, **kwargs)
