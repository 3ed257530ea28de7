"""README's `make demo` transcript, from a run: ``python examples/readme_demo.py`` runs the Makefile's ``demo``
recipe (read from the Makefile, with this interpreter's ``ctxwin``) and rewrites the block of README.md between
``<!-- demo:start -->`` and ``<!-- demo:end -->``; ``--check`` only says whether it is current (tests/test_readme.py
runs that check)."""

from __future__ import annotations

import argparse
import itertools
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START, END = "<!-- demo:start -->", "<!-- demo:end -->"
PROMPT = (
    "$ make demo      # fit a long English/Chinese agent session (tool calls, a 10,000-token build log) into 6,000"
    " tokens"
)


def recipe() -> list[str]:
    """The ``demo`` target's commands as written in the Makefile (a continued line stays one command)."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("demo:"))
    commands, current = [], ""
    for line in itertools.takewhile(lambda text: text.startswith("\t"), lines[start + 1 :]):
        current += line[1:]
        if current.endswith("\\"):
            current += "\n"
        else:
            commands.append(current)
            current = ""
    return commands


def run_ctxwin(command: str, scratch: Path) -> str:
    """What ``make`` shows for one ``ctxwin`` command: the output, stdout and stderr in the order written."""
    arguments = shlex.split(command.replace("\\\n", " "))[1:]
    if "-o" in arguments:  # the fitted file goes to a scratch directory, not into the checkout
        arguments[arguments.index("-o") + 1] = str(scratch / "fitted.json")
    done = subprocess.run(
        [sys.executable, "-m", "ctxwin", *arguments], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, timeout=300, check=True,
    )
    return done.stdout.rstrip("\n")


def transcript() -> str:
    """The console block: the prompt, each command make echoes and what it prints."""
    shown = [PROMPT]
    with tempfile.TemporaryDirectory() as scratch:
        for command in recipe():
            if command.startswith("@"):  # not echoed; an @echo's text is printed
                if command.startswith("@echo "):
                    shown.append(shlex.split(command[1:])[1])
                continue
            if not command.startswith("$(BIN)/ctxwin "):
                raise ValueError(f"the demo recipe runs {command!r}; this script runs only ctxwin commands")
            command = command.replace("$(BIN)", ".venv/bin")
            shown.append(command)
            shown.append(run_ctxwin(command, Path(scratch)))
    return "\n".join(["```console", *shown, "```"])


def split(text: str) -> tuple[str, str, str]:
    """README's text before the block (its start marker included), the block, and the text after it."""
    start, end = text.index(START) + len(START), text.index(END)
    return text[:start], text[start:end].strip("\n"), text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README's transcript is not current")
    args = parser.parse_args()
    before, block, after = split(README.read_text(encoding="utf-8"))
    fresh = transcript()
    if args.check:
        return 0 if block == fresh else 1
    README.write_text(f"{before}\n{fresh}\n{after}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
