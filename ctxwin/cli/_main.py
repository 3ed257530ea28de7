"""The ``ctxwin`` command (also ``python -m ctxwin``): one module per subcommand, only the one being run imported, so
start-up pays for one command's imports. A new subcommand is a module with ``add_arguments`` and ``run`` and its line
in ``COMMANDS``. Whatever a command did not catch becomes one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from ctxwin.cli._output import (
    EXIT_CODES_HELP,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Published,
    Terminated,
    error,
    one_line,
    warning,
)

# The subcommands, in the order ``ctxwin --help`` lists them, with their one-line help (kept here so that listing
# them imports no command module).
COMMANDS = {
    "count": "count the tokens of each message in a conversation file",
    "fit": "fit conversations to a model's token budget and write them out",
    "bench": "compare trimming strategies on your conversations: tokens kept, turns kept, time",
    "counters": "list token counters, their plugins and data origins",
    "models": "list known models, their limits and counters",
    "strategies": "list registered strategies (for fit --strategy)",
}


class _Version(argparse.Action):
    """``--version``, reading the installed version only when asked (importlib.metadata is slow to import)."""

    def __init__(self, option_strings: Sequence[str], dest: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        import importlib.metadata

        try:
            version = importlib.metadata.version("ctxwin")
        except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
            version = "unknown (not installed)"
        print(f"ctxwin {version}")
        parser.exit()


class _OneLineParser(argparse.ArgumentParser):
    """argparse's usage errors as one line naming the flag, the form ``usage_error`` prints (``ctxwin fit: error:
    --keep-last: ...``), without the usage block: scripts read one line per problem (``--help`` shows the usage).
    Subcommands' parsers are of the class of the parser that adds them."""

    def error(self, message: str) -> NoReturn:
        named = message.startswith("argument ")  # a flag's error; else a missing or unknown one: say where to look
        text = message.removeprefix("argument ") if named else f"{message} (see `{self.prog} --help`)"
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(text)}\n")


def _chosen_command(argv: Sequence[str] | None) -> str | None:
    """The subcommand named on the command line: the first argument that is not an option (the top-level options,
    ``--help`` and ``--version``, take no value)."""
    args = sys.argv[1:] if argv is None else argv
    return next((a for a in args if not a.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the arguments of the command ``argv`` names (the others are listed with their help)."""
    parser = _OneLineParser(
        prog="ctxwin",
        description="Fit chat prompts into a model's token budget.",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True)
    chosen = _chosen_command(argv)
    for name, help_text in COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        if name == chosen:
            module = importlib.import_module(f"ctxwin.cli._{name}")
            module.add_arguments(command)
            command.set_defaults(run=module.run, parser=command)
    return parser


def _plugin_warnings(args: argparse.Namespace) -> None:
    """One line per plugin that failed to load (``ctxwin counters`` lists them in full)."""
    if args.command == "counters":
        return
    from ctxwin._plugins import plugin_errors  # loaded by then, by the command

    for problem in {e.plugin: e for e in plugin_errors()}.values():
        warning(f"{problem} (the other plugins work; see `ctxwin counters`)")


def _forgiving_streams() -> None:
    """A lone surrogate read from JSON ("\\ud800") is printed as that escape instead of failing the print; in JSON
    output that is the same string again."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (and Ctrl-C) stop the run unless its output is already in place: then the run is done."""
    if not Published.done:
        raise KeyboardInterrupt if signum == signal.SIGINT else Terminated


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser(argv).parse_args(argv)
    except SystemExit as exc:  # --help, --version, or argparse's usage error (already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    _forgiving_streams()
    Published.done = False
    in_main_thread = threading.current_thread() is threading.main_thread()  # signal handlers live there only
    previous: dict[int, Any] = {}
    if in_main_thread:
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _terminate)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when Ctrl-C is ignored (nohup)
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, _terminate)
    try:
        return _run(args)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _run(args: argparse.Namespace) -> int:
    try:
        result: int = args.run(args)
        _plugin_warnings(args)
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and stop Python's own flush at exit failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INPUT
    except KeyboardInterrupt:
        error("interrupted")
        return EXIT_INTERRUPTED
    except Terminated:
        error("terminated")
        return EXIT_TERMINATED
    except RecursionError:
        from ctxwin.batch._conversation import nesting_error  # imported by the command that read the input

        return error(nesting_error())
    except MemoryError:
        return error("out of memory")
    except Exception as exc:  # a bug: still one line, with what to do about it
        from ctxwin.counters._errors import PluginCounterError  # imported by the command that built a counter

        if isinstance(exc, PluginCounterError):  # a plugin's counter failed: its message names the plugin
            return error(exc)
        return error(f"unexpected {type(exc).__name__}: {exc} (a ctxwin bug: please report it with the input)")
    return result
