"""The documentation: the mkdocs site builds with warnings as errors (a broken link, a page missing from
the nav or a dangling anchor fails), the configuration reference equals what docs/gen_config_reference.py
writes from conf/ today, and the README's links to the docs point at files that exist."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _generator():
    spec = importlib.util.spec_from_file_location("gen_config_reference", os.path.join(ROOT, "docs", "gen_config_reference.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_config_reference_is_generated_from_the_config_tree() -> None:
    gen = _generator()
    with open(gen.OUT, encoding="utf-8") as f:
        checked_in = f.read()
    assert checked_in == gen.render(), \
        "docs/reference/config.md is stale: run python docs/gen_config_reference.py and commit it"


def test_config_reference_covers_every_option_in_conf() -> None:
    with open(os.path.join(ROOT, "docs", "reference", "config.md"), encoding="utf-8") as f:
        text = f.read()
    for folder, _, files in os.walk(os.path.join(ROOT, "conf")):
        group = os.path.relpath(folder, os.path.join(ROOT, "conf")).replace(os.sep, "/")
        for file in files:
            if group != "." and file.endswith(".yaml"):
                name = file[:-5]
                heading = f"### `{group}={name}`" if "/" not in group else f"### `{group}/{name}`"
                assert heading in text, f"conf/{group}/{file} has no section in the reference"
    assert "| `agent.lr` | `2.3e-3` | the agent's recommended learning rate" in text  # keys, defaults, comments


def test_a_comment_lined_up_under_a_keys_comment_goes_on(tmp_path) -> None:
    """A comment line whose '#' sits under the comment after a key's value continues that comment; a
    comment line elsewhere belongs to the key below it (conf/tuner/optuna.yaml's aggregation once
    lent its second line to gpus_per_trial)."""
    path = tmp_path / "x.yaml"
    path.write_text("a: 1      # first half,\n"
                    "          # second half\n"
                    "# b's own comment\n"
                    "b: 2\n"
                    "c: 3  # c's\n"
                    "# d's\n"
                    "d: 4\n")
    keys = {k.path: k.comment for k in _generator().parse_yaml_file(str(path), "g", "x").keys}
    assert keys == {"a": "first half, second half", "b": "b's own comment", "c": "c's", "d": "d's"}


def test_mkdocs_builds_strict(tmp_path) -> None:
    pytest.importorskip("mkdocs", reason="pip install -e '.[docs]' (the dev extra has it)")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "config" / "index.html").is_file()
    assert (tmp_path / "site" / "guide" / "studies" / "index.html").is_file()


def test_readme_links_to_files_that_exist() -> None:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    links = [target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in target]
    assert any(link.startswith("docs/") for link in links)
    missing = [link for link in links if not os.path.exists(os.path.join(ROOT, link))]
    assert not missing, f"README.md links to missing files: {missing}"
