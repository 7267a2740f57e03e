"""The tests mirror the code's layout: ``tests/<package>/<sub>/`` holds the tests of ``<package>/<sub>/``,
so the tests of a module are found where the module is; and ``tuner/`` keeps few files at its top."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: test folders with no package folder of the same name, and why
NOT_MIRRORED = {
    "note_rl": {"learning": "end-to-end learning tests of the agents (slow tier)"},
    "tuner": {"sweeper": "hydra_plugins/note_optuna_sweeper, run through the tuner's fixtures"},
}


def _folders(path: Path) -> set[str]:
    return {p.name for p in path.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}


@pytest.mark.parametrize("package", ["note_rl", "tuner"])
def test_test_folders_mirror_the_package(package: str) -> None:
    tests = _folders(ROOT / "tests" / package) - {"bad_modules"}  # bad_modules: user modules for env.module tests
    code = _folders(ROOT / package)
    assert tests - code - set(NOT_MIRRORED[package]) == set()
    # each mirrored folder is a package (tests import each other as tests.<package>.<sub>.<module>)
    assert all((ROOT / "tests" / package / sub / "__init__.py").is_file() for sub in tests)


def test_tuner_keeps_few_files_at_its_top() -> None:
    top = sorted(p.name for p in (ROOT / "tuner").glob("*.py"))
    assert top == ["__init__.py", "__main__.py"]


def test_test_files_at_a_package_top_test_its_top_modules() -> None:
    """A test file left directly in tests/tuner/ would have no sub-package to mirror."""
    assert sorted(p.name for p in (ROOT / "tests" / "tuner").glob("test_*.py")) == []
