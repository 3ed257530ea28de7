"""Tokenizers from the Hugging Face Hub by repo id: the ``hf:<owner>/<name>[@revision]`` spec form (extra ``hub``)."""

from __future__ import annotations

import re
from pathlib import Path

from ctxwin._errors import InvalidInputError
from ctxwin._install import install_hint
from ctxwin.counters._errors import TokenizerDataError

# Seconds to wait for the Hub's answer to each file's metadata request (huggingface_hub's ``etag_timeout``).
HUB_TIMEOUT = 10.0
# ``owner/name`` as the Hub allows them (letters, digits, ``-_.``), then an optional ``@revision`` (a branch, tag
# or commit; branches may hold ``/``). A path to a ``.json`` file is never a repo id.
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}(?:@[\w./-]{1,255})?$")


def is_repo_id(source: str) -> bool:
    """True when ``source`` has the shape of a Hub repo id, optionally ``@revision`` (``meta-llama/Llama-3.1-8B``)."""
    return bool(_REPO_ID.match(source)) and not source.lower().endswith(".json") and ".." not in source


def hub_tokenizer(source: str) -> Path:
    """The cached ``tokenizer.json`` of the Hub repo ``owner/name[@revision]``, downloaded if needed, with the
    repo's ``tokenizer_config.json`` beside it when it has one; TokenizerDataError saying why when unavailable."""
    try:
        from huggingface_hub import errors
    except ImportError:
        raise TokenizerDataError(
            f"hf:{source} is a Hugging Face Hub repo id, which needs huggingface_hub. Fix: {install_hint('hub')}"
        ) from None
    repo_id, _, revision = source.partition("@")
    try:
        tokenizer = _download(repo_id, "tokenizer.json", revision or None)
    except errors.RepositoryNotFoundError:
        raise InvalidInputError(f"hf:{source}: no such model repo on the Hub (or it is private or gated: set "
                                f"HF_TOKEN)") \
            from None
    except errors.RevisionNotFoundError:
        raise InvalidInputError(f"hf:{source}: the repo has no revision {revision!r}") from None
    except errors.RemoteEntryNotFoundError:
        raise InvalidInputError(f"hf:{source}: the repo has no tokenizer.json (tokenizers' format)") from None
    except Exception as exc:  # offline, unreachable, timed out, a server error, a full disk
        raise _unavailable(source, "tokenizer.json", exc) from None
    if not tokenizer.with_name("tokenizer_config.json").is_file():
        try:  # from the same commit: a branch could have moved on since
            _download(repo_id, "tokenizer_config.json", tokenizer.parent.name)
        except errors.RemoteEntryNotFoundError:  # the repo has none: counted without a chat template
            pass
        except Exception as exc:
            raise _unavailable(source, "tokenizer_config.json (its chat template)", exc) from None
    return tokenizer


def _download(repo_id: str, filename: str, revision: str | None) -> Path:
    """A file of a Hub repo: from the cache without a request when it is there; else one metadata request (never
    retried, so an unreachable Hub fails at once), then the download."""
    import huggingface_hub
    from huggingface_hub import errors

    try:
        return Path(huggingface_hub.hf_hub_download(repo_id, filename, revision=revision, local_files_only=True))
    except errors.LocalEntryNotFoundError:
        if huggingface_hub.constants.HF_HUB_OFFLINE:
            raise
    huggingface_hub.get_hf_file_metadata(huggingface_hub.hf_hub_url(repo_id, filename, revision=revision),
                                         timeout=HUB_TIMEOUT)
    return Path(huggingface_hub.hf_hub_download(repo_id, filename, revision=revision, etag_timeout=HUB_TIMEOUT))


def _unavailable(source: str, what: str, exc: Exception) -> TokenizerDataError:
    """The error for a file that is neither cached nor fetchable, saying why."""
    from huggingface_hub import constants, errors

    if constants.HF_HUB_OFFLINE:
        why = "HF_HUB_OFFLINE is set"
    elif isinstance(exc, errors.HfHubHTTPError):
        why = f"the Hub answered: {_first_line(exc)}"
    else:
        why = f"{constants.ENDPOINT} cannot be reached: {type(exc).__name__}: {_first_line(exc)}"
    return TokenizerDataError(
        f"hf:{source}: {what} is not in the Hugging Face cache and cannot be downloaded ({why}); download it once "
        "while online, or give a local path"
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
