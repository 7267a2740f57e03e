"""Every ``note-tune`` command in README.md and in the documentation pages (``docs/**/*.md``) is checked
as written, in-process and without training: a training / study / sweep command composes with the
app's own pre-check (``tuner.cli.precheck._precheck``: unknown keys, group options, unparsable
overrides), then passes the schema (``validate``), the study settings and the search space's checks;
a subcommand (``eval``, ``report``, ...) is given only keys it takes.  Commands that need what an
earlier command made (a study dir, a run dir), a server (``postgresql://``) or a value the reader fills
in (``<study_name>``, ``DIR``) are checked for their keys only.  README commands that failed as written
(issue 36) fail here.  Everything runs in this process: no command starts a subprocess."""

from __future__ import annotations

import os
import re
import glob
import shlex
import sys
import warnings
from dataclasses import dataclass

import pytest
from omegaconf import OmegaConf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEHOLDER = re.compile(r"<[^>]+>|\bDIR\b|\bFILE\b|\bNAME\b|RUN_DIR|db-host|\.\.\.")


@dataclass
class Command:
    line: int
    cwd: str
    words: list[str]
    error: str | None = None  # "# error: ... (exit 2)" after it: the page says it is refused so
    source: str = "README.md"  # the page it is written in, relative to the repository root

    @property
    def id(self) -> str:
        return f"{self.source}:{self.line}"


def _split_comment(text: str) -> tuple[str, str]:
    """``text`` split into its command and its trailing shell comment (a ``#`` outside quotes, after
    white space)."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i], text[i + 1:].strip()
    return text, ""


def _expected_error(comment: str) -> str | None:
    """The error line a ``# error: ... (exit 2)`` comment promises, up to its first elision ``(...)``."""
    if comment.startswith("on a machine without a GPU: error:"):  # this machine has none
        comment = comment.split(": ", 1)[1]
    if not comment.startswith("error:"):
        return None
    text = re.sub(r"\s*\(exit 2\)\s*$", "", comment).strip()
    return text.split("...")[0].rstrip(" (")


def doc_pages() -> list[str]:
    """README.md and every page of the documentation site, relative to the repository root."""
    pages = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return ["README.md", *pages]


def readme_commands(source: str = "README.md") -> list[Command]:
    """The ``note-tune`` commands of the ``bash`` blocks of ``source`` (README.md or a docs page), each
    with the directory it runs in (a ``cd`` earlier in its block)."""
    lines = open(os.path.join(ROOT, source), encoding="utf-8").read().splitlines()
    out, block, cwd, pending, start = [], False, ROOT, "", 0
    for number, raw in enumerate(lines, 1):
        if raw.strip().startswith("```"):
            block, cwd = raw.strip() == "```bash", ROOT
            continue
        if not block:
            continue
        text, comment = _split_comment(raw)
        text = text.rstrip()
        if pending:
            text = pending + " " + text.strip()
        else:
            start = number
        if text.endswith("\\"):
            pending = text[:-1]
            continue
        pending = ""
        for part in re.split(r"\s*(?:&&|;)\s*", text.strip()):
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # PYTHONPATH=. note-tune ...
                words = words[1:]
            if words[:1] == ["cd"] and len(words) == 2:
                cwd = os.path.join(cwd, words[1])
            elif words and os.path.basename(words[0]) == "note-tune":
                out.append(Command(start, cwd, words[1:], _expected_error(comment), source))
    return out


COMMANDS = [command for page in doc_pages() for command in readme_commands(page)]
SUBCOMMANDS = ("report", "dashboard", "eval", "play", "export", "reevaluate", "summary")


def test_the_readme_has_commands_to_check() -> None:
    assert len(COMMANDS) >= 60  # the extraction found the commands (not an empty pass)
    assert any(c.words[:1] == ["report"] for c in COMMANDS) and any("-m" in c.words for c in COMMANDS)
    readme = [c for c in COMMANDS if c.source == "README.md"]
    assert len(readme) >= 10  # the README's own list of the commands a user needs
    pages = {c.source for c in COMMANDS if c.source != "README.md"}
    for page in ("docs/guide/tuner-app.md", "docs/guide/studies.md", "docs/guide/logging.md", "docs/guide/finders.md"):
        assert page in pages, f"no note-tune command found in {page}"


@pytest.mark.parametrize("command", COMMANDS, ids=[c.id for c in COMMANDS])
def test_readme_command_is_valid_as_written(command: Command, capsys) -> None:
    text = " ".join(command.words)
    if command.words[:1] and command.words[0] in SUBCOMMANDS:
        _check_subcommand(command)
        return
    if command.words[:1] and command.words[0].startswith("--") and command.words[0] not in ("--config-dir",
                                                                                             "--config-name"):
        return  # --help, --hydra-help, --info: Hydra's own
    if PLACEHOLDER.search(text) or "postgresql://" in text or _needs_earlier_output(command):
        return  # a value the reader fills in, a server, or a folder an earlier command made: keys only
    from tuner.cli.precheck import _precheck

    composed: list = []
    cwd = os.getcwd()
    os.chdir(command.cwd)
    sys.path.insert(0, command.cwd)  # PYTHONPATH=. in front of a command (a user's own agent package)
    try:
        _precheck(list(command.words), composed)
        refused = None
    except SystemExit as exc:
        refused = capsys.readouterr().err.strip()
        if command.error is None:
            pytest.fail(f"{command.id}: note-tune {text}\n  refused ({exc.code}): {refused}")
    finally:
        os.chdir(cwd)
    try:
        if refused is None:
            assert composed, f"{command.id}: the pre-check composed nothing for: note-tune {text}"
            for cfg in composed:
                _check_config(cfg, command)
    except _Refused as exc:
        refused = str(exc)
    finally:
        sys.path.remove(command.cwd)
    if command.error is not None:  # the page shows this command's refusal: it must be that one
        assert refused is not None and refused.startswith(command.error), \
            f"{command.id}: note-tune {text}\n  the page says: {command.error}\n  got: {refused}"
    elif refused is not None:
        pytest.fail(f"{command.id}: note-tune {text}\n  {refused}")


class _Refused(Exception):
    """A config the schema or the study settings refuse; the message is the app's error line."""


def _needs_earlier_output(command: Command) -> bool:
    words = command.words
    for flag in ("--config-dir", "--config-path"):
        if flag in words:
            folder = os.path.join(command.cwd, words[words.index(flag) + 1])
            if not os.path.isdir(folder) or flag == "--config-dir" and "--config-name" in words:
                return True  # a study's best_config.yaml: made by the study command before it
    return any(w.startswith(("resume=", "init_from=")) for w in words)


def _check_config(cfg, command: Command) -> None:
    from tuner.common.errors import ConfigError
    from tuner.config.schema import validate
    from tuner.config.search import parse_space
    from tuner.config.search_cost import check_cost

    cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            typed = validate(cfg)
            if OmegaConf.select(typed, "tuner.name") == "optuna":
                from tuner.study.settings import tuner_settings

                settings = tuner_settings(typed.tuner)
                check_cost(parse_space(typed.search, typed), typed, settings.max_cost_ratio)
    except ConfigError as exc:
        raise _Refused(f"error: {exc}") from None


def _check_subcommand(command: Command) -> None:
    from tuner.cli.subcommands import ALLOWED

    name, args = command.words[0], command.words[1:]
    if name == "summary":
        options = [a for a in args if "=" in a and a.split("=", 1)[0] in ALLOWED["summary"]]
        assert len(args) > len(options), f"{command.id}: summary needs a directory"
        return
    if name == "export" and args and "=" not in args[0]:
        args = args[1:]  # note-tune export <run dir> ...
    for arg in args:
        if arg in ("-h", "--help"):
            continue
        key = arg.split("=", 1)[0]
        assert "=" in arg and key in ALLOWED[name], \
            f"{command.id}: note-tune {' '.join(command.words)}: {name} takes no {key!r} (it takes {ALLOWED[name]})"
