"""Write docs/reference/config.md from the config tree in conf/.

The page lists the primary config (conf/config.yaml) composed by Hydra with its default choices, then
every config group, every option of each group, and every key of each option with the default written
in the YAML file and the comments around it (the comment lines just above a key and the one after it on
its line).  Run it after changing anything under conf/:

    python docs/gen_config_reference.py            # rewrites docs/reference/config.md
    python docs/gen_config_reference.py --check    # exit 1 when the checked-in page is stale

tests/test_docs.py runs the check, so the page cannot drift from the configs.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONF = os.path.join(ROOT, "conf")
OUT = os.path.join(ROOT, "docs", "reference", "config.md")

KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.\-/@]*|'[^']*'|\"[^\"]*\")\s*:(?P<rest>.*)$")


@dataclass
class Key:
    path: str
    value: str | None  # the text written after the colon; None for a mapping or a block list
    comment: str


@dataclass
class Option:
    group: str
    name: str
    package: str | None  # None: the group's own package
    header: str
    defaults: list[tuple[str, str]] = field(default_factory=list)  # (entry, comment)
    keys: list[Key] = field(default_factory=list)


def _split_comment(text: str) -> tuple[str, str]:
    """``text`` split at its first ``#`` outside quotes that starts a YAML comment."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip(), text[i + 1:].strip()
    return text.rstrip(), ""


def parse_yaml_file(path: str, group: str, name: str) -> Option:
    """Keys (dotted paths), written values and comments of one config file, read line by line so the
    comments survive (a YAML loader drops them)."""
    lines = open(path, encoding="utf-8").read().splitlines()
    header: list[str] = []
    package = None
    i = 0
    while i < len(lines) and lines[i].startswith("#"):  # the file's own comment block
        text = lines[i][1:].strip()
        if text.startswith("@package"):
            package = text.split(None, 1)[1].strip()
        else:
            header.append(text)
        i += 1
    option = Option(group, name, package, _join(header))
    stack: list[tuple[int, str]] = []  # (indent, key) of the mappings the current line sits in
    pending: list[str] = []  # comment lines waiting for the key below them
    block_indent = None  # inside a block scalar (|, >) or a block list: skip lines indented deeper
    in_defaults = False
    inline = None  # (column of its '#', key) of the last key line with a comment after its value
    for raw in lines[i:]:
        if not raw.strip():
            pending = [] if not in_defaults else pending
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if block_indent is not None:
            if indent > block_indent or raw.lstrip().startswith("- ") and indent == block_indent:
                if in_defaults and raw.lstrip().startswith("#"):
                    pending.append(raw.strip()[1:].strip())
                elif in_defaults and raw.lstrip().startswith("- "):
                    entry, comment = _split_comment(raw.strip()[2:])
                    option.defaults.append((entry, _join(pending + [comment])))
                    pending = []
                continue
            block_indent, in_defaults = None, False
        if raw.lstrip().startswith("#"):
            if inline is not None and not pending and indent == inline[0]:
                # lined up under the comment after a key's value: that comment goes on
                inline[1].comment = _join([inline[1].comment, raw.strip()[1:].strip()])
                continue
            inline = None
            pending.append(raw.strip()[1:].strip())
            continue
        inline = None
        match = KEY_LINE.match(raw)
        if not match:
            pending = []
            continue
        key = match["key"].strip("'\"")
        rest, comment = _split_comment(match["rest"])
        value = rest.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dotted = ".".join([k for _, k in stack] + [key])
        if dotted == "defaults" and not stack:
            block_indent, in_defaults = indent, True
            pending = []
            continue
        if dotted == "hydra" and not stack and name == "config":
            block_indent = indent  # Hydra's own settings (the --help text): not the app's config
            pending = []
            continue
        text = _join(pending + ([comment] if comment else []))
        pending = []
        if value in ("", "|", "|-", ">", ">-"):
            if value:
                block_indent = indent  # a block scalar: its text is the value
                option.keys.append(Key(dotted, "(text block)", text))
            else:
                stack.append((indent, key))
                option.keys.append(Key(dotted, None, text))
            continue
        option.keys.append(Key(dotted, value, text))
        if comment:
            inline = (raw.find("#", match.start("rest") + len(rest)), option.keys[-1])
    _fold_block_lists(option, lines[i:])
    return option


def _fold_block_lists(option: Option, lines: list[str]) -> None:
    """A key followed by ``- item`` lines (a block list) gets the items as its value."""
    for key in option.keys:
        if key.value is not None:
            continue
        leaf = key.path.split(".")[-1]
        children = [k for k in option.keys if k.path.startswith(key.path + ".")]
        if children:
            continue
        items = []
        for n, raw in enumerate(lines):
            match = KEY_LINE.match(raw)
            if match and match["key"].strip("'\"") == leaf and not _split_comment(match["rest"])[0].strip():
                for item in lines[n + 1:]:
                    if item.lstrip().startswith("- "):
                        items.append(_split_comment(item.strip()[2:])[0])
                    elif item.strip() and not item.lstrip().startswith("#"):
                        break
                break
        key.value = "[" + ", ".join(items) + "]" if items else "{}"


def _join(parts: list[str]) -> str:
    return " ".join(p for p in parts if p).strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _prose(text: str) -> str:
    """A YAML comment as Markdown text: ``<run dir>`` and the like shown, not read as HTML tags."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                   for p in parts)


def _code(text: str) -> str:
    ticks = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{ticks}{pad}{_cell(text)}{pad}{ticks}"


def compose_defaults() -> dict[str, str]:
    """The option Hydra's composition of conf/config.yaml picks in each group (no overrides)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF, version_base="1.3"):
            cfg = compose(config_name="config", return_hydra_config=True)
            return {str(k): str(v) for k, v in cfg.hydra.runtime.choices.items() if not str(k).startswith("hydra")}
    finally:
        GlobalHydra.instance().clear()


def group_packages() -> dict[str, str]:
    """``group@package`` entries of the primary config's defaults list (a group placed elsewhere)."""
    out = {}
    for line in open(os.path.join(CONF, "config.yaml"), encoding="utf-8"):
        match = re.match(r"\s*-\s*(?:optional\s+)?([\w/]+)@([\w.]+)\s*:", line)
        if match:
            out[match[1]] = match[2]
    return out


def collect() -> tuple[Option, dict[str, list[Option]], dict[str, str]]:
    primary = parse_yaml_file(os.path.join(CONF, "config.yaml"), "", "config")
    groups: dict[str, list[Option]] = {}
    notes: dict[str, str] = {}
    for folder, dirs, files in os.walk(CONF):
        dirs.sort()
        group = os.path.relpath(folder, CONF).replace(os.sep, "/")
        if group == ".":
            continue
        for file in sorted(files):
            if file.endswith(".yaml"):
                groups.setdefault(group, []).append(parse_yaml_file(os.path.join(folder, file), group, file[:-5]))
            elif file == "README.md":
                notes[group] = open(os.path.join(folder, file), encoding="utf-8").read()
    return primary, dict(sorted(groups.items())), notes


def _keys_table(option: Option, prefix: str) -> list[str]:
    rows = []
    for key in option.keys:
        if key.value is None and not key.comment:
            continue  # a mapping with no comment of its own: its keys have the rows
        path = f"{prefix}.{key.path}" if prefix else key.path
        value = "" if key.value is None else _code(key.value)
        rows.append(f"| {_code(path)} | {value} | {_cell(_prose(key.comment))} |")
    if not rows:
        return []
    return ["| key | default | comment |", "| --- | --- | --- |", *rows, ""]


def render() -> str:
    primary, groups, notes = collect()
    choices = compose_defaults()
    packages = group_packages()
    out = [
        "# Configuration reference",
        "",
        "<!-- generated by docs/gen_config_reference.py from conf/; do not edit by hand -->",
        "",
        "Every config group of `conf/`, every option of each group and every key of each option, with the",
        "default written in its YAML file and the comments around it. Pick an option with `group=option`",
        "and override any key with `key=value` on the `note-tune` command line (see",
        "[The tuner app](../guide/tuner-app.md)). Values such as `${budget_fraction:0.16}` are",
        "interpolations, resolved when the config is composed. This page is generated by",
        "`python docs/gen_config_reference.py`; `tests/test_docs.py` fails when it is stale.",
        "",
        "## The primary config (`conf/config.yaml`)",
        "",
        _prose(primary.header),
        "",
        "Default option of each group (Hydra's composition of `conf/config.yaml` with no overrides):",
        "",
        "| group | default |",
        "| --- | --- |",
        *[f"| `{g}` | `{o}` |" for g, o in sorted(choices.items())],
        "",
        "The defaults list, in order:",
        "",
        *[f"- {_code(entry)}" + (f": {_prose(comment)}" if comment else "") for entry, comment in primary.defaults],
        "",
        "Keys of the primary config:",
        "",
        *_keys_table(primary, ""),
    ]
    for group, options in groups.items():
        out += [f"## `{group}`", ""]
        names = ", ".join(f"`{o.name}`" for o in options)
        default = choices.get(group)
        out += [f"Options: {names}." + (f" Default: `{default}`." if default else ""), ""]
        if group in notes:
            note = notes[group].split("\n", 1)[1].strip() if notes[group].startswith("# ") else notes[group]
            out += [note, ""]
        for option in options:
            out += [f"### `{group}={option.name}`" if "/" not in group else f"### `{group}/{option.name}`", ""]
            if option.header:
                out += [_prose(option.header), ""]
            package = option.package or packages.get(group, group.replace("/", "."))
            prefix = "" if package == "_global_" else package
            if package == "_global_":
                out += ["Package `_global_`: its keys are full paths from the root of the config.", ""]
            if option.defaults:
                out += ["Defaults list: " + ", ".join(_code(entry) for entry, _ in option.defaults) + ".", ""]
            out += _keys_table(option, prefix)
    return "\n".join(line.rstrip() for line in out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the checked-in page instead of writing it")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = open(OUT, encoding="utf-8").read() if os.path.exists(OUT) else ""
        if current != text:
            print(f"{os.path.relpath(OUT, ROOT)} is stale: run python docs/gen_config_reference.py", file=sys.stderr)
            return 1
        return 0
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(OUT, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
