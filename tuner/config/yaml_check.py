"""Safety checks on a user's YAML config file before Hydra reads it.

Hydra (OmegaConf) expands every YAML alias into a copy of its anchor's node, so a few hundred bytes
of nested anchors and aliases (the "billion laughs" file) grow into 10**9 nodes and the app hangs
while it builds them; a FIFO (named pipe) named like a config blocks the first ``open`` until some
other process writes to it.  :func:`check_yaml_file` refuses both, and YAML nested too deeply,
without expanding anything: PyYAML's composer keeps an alias as a reference to its anchor's node,
so the size the file *would* expand to is counted over that graph, each node once.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from ..common.files import special_kind

__all__ = ["MAX_NODES", "MAX_DEPTH", "YamlRefused", "check_yaml_file"]

#: nodes a config may expand to, aliases expanded (a large hand-written config has a few thousand)
MAX_NODES = 100_000
#: nesting a config may reach, aliases expanded (Hydra's own configs are a few levels deep)
MAX_DEPTH = 100


class YamlRefused(ValueError):
    """A config file Hydra must not read; the message is one line (without the file's path)."""


def check_yaml_file(path: str) -> Any:
    """The data of the YAML file at ``path`` (as ``yaml.safe_load`` gives it), after checking that it
    is a regular file whose aliases expand to at most :data:`MAX_NODES` nodes and :data:`MAX_DEPTH`
    levels.  Raises :class:`YamlRefused` for those, ``yaml.YAMLError`` for a file that does not parse,
    ``OSError`` / ``UnicodeDecodeError`` for one that cannot be read."""
    kind = special_kind(os.stat(path).st_mode)  # stat, not open: opening a FIFO would block
    if kind is not None:
        raise YamlRefused(f"is {kind}; a config must be a regular YAML file")
    with open(path) as f:
        loader = yaml.SafeLoader(f)
        try:
            try:
                node = loader.get_single_node()
            except RecursionError:  # PyYAML's composer recurses once per level of nesting
                raise YamlRefused(f"is nested more than {MAX_DEPTH} levels deep") from None
            if node is None:
                return None
            _expanded(node, 1, {}, set())
            return loader.construct_document(node)
        finally:
            loader.dispose()


def _expanded(node: yaml.Node, depth: int, seen: dict[int, tuple[int, int]], active: set[int]) -> tuple[int, int]:
    """``(nodes, levels)`` of ``node`` with every alias expanded, counted over the composed graph
    (``seen`` holds each node's answer, so a node that many aliases share is visited once)."""
    if depth > MAX_DEPTH:
        raise YamlRefused(f"is nested more than {MAX_DEPTH} levels deep (aliases expanded)")
    key = id(node)
    if key in seen:
        return seen[key]
    if key in active:  # "&a [*a]": an anchor inside its own node expands for ever
        raise YamlRefused("has an alias inside its own anchor (a recursive structure)")
    active.add(key)
    if isinstance(node, yaml.MappingNode):
        children = [child for pair in node.value for child in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    else:
        children = []
    size, levels = 1, 1
    for child in children:
        child_size, child_levels = _expanded(child, depth + 1, seen, active)
        size, levels = size + child_size, max(levels, child_levels + 1)
        if size > MAX_NODES:
            raise YamlRefused(f"expands to more than {MAX_NODES} values once its aliases are expanded "
                              f"(nested anchors and aliases, a 'billion laughs' file)")
    active.discard(key)
    seen[key] = (size, levels)
    return size, levels
