"""Output files that are never lost: written to a temporary file beside the target and renamed over it at the end, so
a bad input, a full disk, Ctrl-C or a kill part way leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import IO

from ctxwin.cli._output import Published

TEMP_MARK = ".ctxwin-tmp-"


def same_file(a: str, b: str) -> bool:
    """Whether two paths name the same file (a missing path is the same as nothing that exists)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _regular(path: str | None, stream: int) -> os.stat_result | None:
    """The regular file at ``path``, or open on ``stream`` (for ``None`` / ``"-"``), else None."""
    try:
        found = os.fstat(stream) if path in (None, "-") else os.stat(path)
    except (OSError, ValueError):
        return None
    return found if stat.S_ISREG(found.st_mode) else None


def writes_over(output: str | None, source: str) -> bool:
    """Whether writing ``output`` (a path; ``None`` or ``"-"``: stdout) would write over the input ``source`` (a
    path; ``"-"``: stdin): the same path, or the same regular file reached another way (``-o /dev/stdin`` with
    stdin redirected from it, stdout appending to it). Terminals and pipes are never the same file as a file."""
    if output not in (None, "-") and source != "-" and same_file(output, source):
        return True
    written, read = _regular(output, 1), _regular(source, 0)
    return written is not None and read is not None and (written.st_dev, written.st_ino) == (read.st_dev, read.st_ino)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back (in the main thread, where Python runs signal handlers) until the block is done:
    their handlers then run after it, never half way through it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


class AtomicOutput:
    """``-o PATH`` (or stdout for ``None`` / ``"-"``); ``stream()`` opens it on first use, ``commit()`` publishes.

    Leaving the ``with`` block without ``commit()`` (an error, Ctrl-C) removes the temporary file; the target is
    untouched. Nothing is created before ``stream()`` is called, so callers read their input first.
    """

    def __init__(self, path: str | None) -> None:
        self.path = None if path in (None, "-") else path
        self._handle: IO[str] | None = None
        self._temp: str | None = None
        self._target, self._mode = "", 0

    @property
    def name(self) -> str:
        return self.path or "<stdout>"

    def stream(self) -> IO[str]:
        if self._handle is not None:
            return self._handle
        if self.path is None:
            self._handle = sys.stdout
            return self._handle
        self.check()
        target = os.path.realpath(self.path)  # through a symlink, so that the link stays a link
        try:
            mode: int | None = os.stat(target).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):  # a device or a pipe (/dev/null, a FIFO): no rename
            self._handle = open(target, "w", encoding="utf-8", errors="backslashreplace", newline="\n")  # noqa: SIM115
            return self._handle
        folder, base = os.path.split(target)
        # backslashreplace: the only text UTF-8 cannot encode is a lone surrogate, which ctxwin writes only inside JSON
        # strings, where ``\udXXX`` is its JSON escape, so the data round-trips.
        descriptor, self._temp = tempfile.mkstemp(prefix=f".{base}{TEMP_MARK}", dir=folder)
        self._target, self._mode = target, _new_file_mode() if mode is None else stat.S_IMODE(mode)
        self._handle = os.fdopen(descriptor, "w", encoding="utf-8", errors="backslashreplace", newline="\n")
        return self._handle

    def check(self) -> None:
        """OSError now, before any work, for a target that cannot be written: a directory, a missing folder."""
        if self.path is None:
            return
        if os.path.isdir(self.path):
            raise IsADirectoryError(21, "is a directory", self.path)
        folder = os.path.dirname(os.path.realpath(self.path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(2, f"no such directory: {folder}", self.path)

    def commit(self) -> None:
        """Flush everything and put the complete file in place of the target (stdout: flush)."""
        handle = self.stream()
        handle.flush()
        if self._temp is None:
            return
        os.fsync(handle.fileno())
        os.chmod(self._temp, self._mode)  # the replaced file's permissions, or a new file's (mkstemp's are 0600)
        handle.close()
        with _signals_held():  # the rename and the note that it happened, together
            os.replace(self._temp, self._target)
            self._temp = None
            Published.done = True

    def discard(self) -> None:
        """Close what was opened; remove the temporary file unless ``commit`` already put it in place."""
        if self._handle is not None and self._handle is not sys.stdout:
            with contextlib.suppress(OSError):
                self._handle.close()
        if self._temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._temp)
            self._temp = None

    def __enter__(self) -> AtomicOutput:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.discard()
