"""Fit a Ray Dataset of conversations (``fit_dataset``, one ``map_batches``, results identical to ``ctxwin.fit`` on
each row) and read a JSONL file in byte ranges (``read_jsonl``). Ray (the ``ray`` extra) is imported only when
either is called (docs/batch.md).
"""

from __future__ import annotations

import functools
import json
import os
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin._install import install_hint
from ctxwin.batch._item import Fitter, describe, is_request
from ctxwin.batch._shards import lines_in, ranges
from ctxwin.messages._request_forms.chat import CHAT
from ctxwin.messages._request_forms.registry import get_form
from ctxwin.strategies._ledger import KINDS

if TYPE_CHECKING:
    import pyarrow  # type: ignore[import-untyped]
    import ray.data

# Conversations per batch: large enough that Ray's per-batch cost is noise next to fitting them.
__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_SHARD_BYTES", "FitBatch", "fit_dataset", "read_jsonl"]

DEFAULT_BATCH_SIZE = 128
# Bytes of a JSONL file per read task: what one task holds in memory at most (its lines and their Arrow block).
DEFAULT_SHARD_BYTES = 16 << 20

KEPT_BATCHES = 4  # planners a Ray worker process keeps, for as many fit_dataset calls running at once
_BATCHES: dict[str, FitBatch] = {}  # this worker process's FitBatch, by fit_dataset call (tasks, not actors)


def _arrow_filled(value: Any) -> Any:
    """A value as it was before Arrow unified its structs: drop the keys that came back as null.

    Arrow stores a column of dicts as one struct type holding every key any row has; a message without
    ``tool_calls`` comes back with ``"tool_calls": None``. ``content`` is kept when null: it is meaningful (an
    assistant turn that only calls tools) and converts as empty text either way.
    """
    if isinstance(value, dict):
        return {k: _arrow_filled(v) for k, v in value.items() if v is not None or k == "content"}
    if isinstance(value, list):
        return [_arrow_filled(v) for v in value]
    return value


def _is_nested(kind: pyarrow.DataType) -> bool:
    import pyarrow

    return bool(pyarrow.types.is_list(kind) or pyarrow.types.is_large_list(kind) or pyarrow.types.is_struct(kind))


def _summary_type() -> pyarrow.DataType:
    """``Plan.summary()`` as an Arrow struct, declared so that no batch's values (say, no warnings) change it."""
    import pyarrow

    counts = ("tokens_before", "tokens_after", "budget")
    kept = ("recent_turns_verbatim", "dropped", "truncated", "summarized", "left_out")
    return pyarrow.struct(
        [
            ("fits", pyarrow.bool_()),
            *((name, pyarrow.int64()) for name in counts),
            ("budget_used", pyarrow.float64()),
            *((name, pyarrow.int64()) for name in kept),
            ("recalled", pyarrow.list_(pyarrow.string())),
            ("estimated", pyarrow.bool_()),
            ("warnings", pyarrow.list_(pyarrow.string())),
            ("ledger", _ledger_type()),
        ]
    )


def _ledger_type() -> pyarrow.DataType:
    """``LedgerReport.as_dict()`` as an Arrow struct (null when the plan carried no ledger)."""
    import pyarrow

    entry = pyarrow.struct([("kind", pyarrow.string()), ("text", pyarrow.string()), ("source", pyarrow.string()),
                            ("speaker", pyarrow.string()), ("pinned", pyarrow.bool_()),
                            ("replaces", pyarrow.list_(pyarrow.string()))])
    entries = pyarrow.list_(entry)
    return pyarrow.struct([("entries", pyarrow.struct([(kind, entries) for kind in KINDS])),
                           ("carried", pyarrow.int64()), ("left_out", entries), ("superseded", entries),
                           ("tokens", pyarrow.int64())])


class FitBatch:
    """The ``map_batches`` callable: one ``Fitter`` per Ray actor, applied to each row of each batch."""

    def __init__(
        self,
        fit_kwargs: Mapping[str, Any],
        column: str,
        tools_column: str | None,
        output_column: str,
        plan_column: str,
        error_column: str,
    ) -> None:
        self.fitter = Fitter({**fit_kwargs, "output": CHAT.name})
        self.column, self.tools_column = column, tools_column
        self.outputs = (output_column, plan_column, error_column)

    def __call__(self, batch: pyarrow.Table) -> pyarrow.Table:
        import pyarrow

        conversations = self._values(batch, self.column)
        tools = self._values(batch, self.tools_column) if self.tools_column else [None] * len(conversations)
        fitted: list[str | None] = []
        plans: list[dict[str, Any] | None] = []
        errors: list[str | None] = []
        for index, (conversation, row_tools) in enumerate(zip(conversations, tools, strict=True)):
            try:
                output, plan, error = self._fit_row(index, conversation, row_tools)
            except Exception as exc:  # a row's failure is that row's error, whatever it is: the job goes on
                output, plan, error = None, None, describe(exc)
            fitted.append(output)
            plans.append(plan)
            errors.append(error)
        columns = (
            pyarrow.array(fitted, pyarrow.string()),
            pyarrow.array(plans, _summary_type()),
            pyarrow.array(errors, pyarrow.string()),
        )
        for name, values in zip(self.outputs, columns, strict=True):
            if name in batch.column_names:
                batch = batch.set_column(batch.column_names.index(name), name, values)
            else:
                batch = batch.append_column(name, values)
        return batch

    @staticmethod
    def _values(batch: pyarrow.Table, name: str) -> list[Any]:
        if name not in batch.column_names:
            raise KeyError(f"fit_dataset: the dataset has no column {name!r}; its columns are {batch.column_names}")
        column = batch.column(name)
        values = column.to_pylist()
        return [_arrow_filled(v) for v in values] if _is_nested(column.type) else values

    def _fit_row(
        self, index: int, conversation: Any, tools: Any
    ) -> tuple[str | None, dict[str, Any] | None, str | None]:
        if conversation is None:
            return None, None, "the row has no conversation (null)"
        try:
            conversation, tools = (_json(v) for v in (conversation, tools))
        except RecursionError as exc:
            return None, None, describe(exc)
        except ValueError as exc:  # JSONDecodeError, bytes that are not UTF-8, an integer too long to convert
            return None, None, f"not valid JSON: {exc}"
        if tools is not None:
            conversation = (
                {**conversation, "tools": tools}
                if is_request(conversation)
                else {"messages": conversation, "tools": tools}
            )
        result = self.fitter.fit(index, conversation)
        if result.error is not None:
            return None, None, result.error
        try:
            fitted = json.dumps(result.messages, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            return None, None, f"the fitted messages cannot be written as JSON: {describe(exc)}"
        return fitted, result.summary, None


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _fit_batch(key: str, arguments: dict[str, Any], batch: pyarrow.Table) -> pyarrow.Table:
    """``map_batches``' function when it runs as tasks: the process's ``FitBatch`` for this call, built once."""
    fit_batch = _BATCHES.get(key)
    if fit_batch is None:
        if len(_BATCHES) >= KEPT_BATCHES:  # a long-lived worker process does not keep every earlier call's planner
            _BATCHES.pop(next(iter(_BATCHES)))
        fit_batch = _BATCHES[key] = FitBatch(**arguments)
    return fit_batch(batch)


def _compute(concurrency: int | tuple[int, int] | None) -> Any:
    from ray.data import ActorPoolStrategy

    if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency >= 1:
        return ActorPoolStrategy(size=concurrency)
    if (
        isinstance(concurrency, tuple)
        and len(concurrency) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in concurrency)
        and 1 <= concurrency[0] <= concurrency[1]
    ):
        return ActorPoolStrategy(min_size=concurrency[0], max_size=concurrency[1])
    raise InvalidInputError(f"concurrency must be a positive int or a (min, max) pair of them, got {concurrency!r}")


def fit_dataset(
    ds: ray.data.Dataset,
    *,
    column: str = "messages",
    output_column: str = "fitted_messages",
    plan_column: str = "fit_plan",
    error_column: str = "fit_error",
    tools_column: str | None = None,
    concurrency: int | tuple[int, int] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    preserve_order: bool = True,
    **fit_kwargs: Any,
) -> ray.data.Dataset:
    """``ds`` with three columns added, each row fitted as ``ctxwin.fit(row[column], **fit_kwargs)`` would be.

    ``column`` holds each row's conversation as a **JSON string** (a list of messages, or a request object
    ``{"messages": [...], "tools": [...]}``: what ``ray.data.read_text`` gives for a JSONL file) or as a **list
    of message dicts** (OpenAI or Anthropic format; also a request struct). JSON strings reach the planner
    byte for byte; nested lists and structs pass through Arrow, which gives every dict every key any row has,
    null where absent; those nulls are removed again (so a key explicitly null in your data counts as absent).
    ``tools_column`` (optional): per-row tool definitions, a JSON string or a list, sent instead of ``tools``.

    Added columns: ``output_column`` — the fitted conversation as a JSON string of OpenAI-format messages (a
    string because Arrow would otherwise merge the differing keys of the messages: ``tool_calls`` on some,
    ``tool_call_id`` on others; ``json.loads`` gives back exactly the list ``fit(..., output="openai")``
    returns); ``plan_column`` — ``Plan.summary()`` as a struct (fits, tokens_before, tokens_after, budget,
    budget_used, recent_turns_verbatim, dropped, truncated, summarized, left_out, recalled, estimated, warnings,
    ledger);
    ``error_column`` — null, or why that row could not be fitted (its other two columns are then null). A bad row
    never fails the job, whatever its failure (bad JSON, nesting thousands of levels deep, any exception of a
    counter or strategy).

    Rows come out in input order (``preserve_order``: it sets ``execution_options.preserve_order`` on the
    context ``ds`` shares with the Datasets derived from it; ``False`` lets Ray Data emit blocks as they finish,
    and ``read_jsonl``'s ``path`` and ``offset`` columns then rejoin rows to their input).

    ``concurrency``: ``None`` (the default) runs the fitting as Ray tasks, on every CPU of the cluster, sharing
    them with the read and write tasks (each worker process builds its planner once); ``n`` or ``(min, max)``
    runs it on an actor pool of that size, each actor holding one CPU for as long as the pipeline runs (a fixed
    ``n`` equal to all CPUs starves the read tasks of a file-backed dataset). ``batch_size``: rows per call.
    ``fit_kwargs`` are
    ``ctxwin.fit``'s (``model``, ``tools``, ``context_window``, ``reserve_output``, ``strategies``, ``summarizer``,
    ...); they are checked here, in the driver, and shipped once to each actor. The result is lazy, like any
    Dataset.
    """
    try:
        import ray.data
    except ImportError as exc:
        raise ImportError(f"ctxwin.integrations.ray needs Ray Data: {install_hint('ray')}") from exc
    if not isinstance(ds, ray.data.Dataset):
        raise InvalidTypeError(f"fit_dataset expects a ray.data.Dataset, got {type(ds).__name__}")
    names = (output_column, plan_column, error_column)
    if len(set(names)) != len(names):
        raise InvalidInputError(f"output_column, plan_column and error_column must differ, got {names}")
    if get_form(fit_kwargs.get("output", CHAT.name)) is not CHAT:
        raise InvalidInputError("fit_dataset writes OpenAI-format messages; output= cannot be changed")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(f"batch_size must be a positive int, got {batch_size!r}")
    compute = None if concurrency is None else _compute(concurrency)
    Fitter(fit_kwargs)  # a bad model, strategy or budget fails here, not in every task or actor
    arguments = {
        "fit_kwargs": fit_kwargs,
        "column": column,
        "tools_column": tools_column,
        "output_column": output_column,
        "plan_column": plan_column,
        "error_column": error_column,
    }
    if preserve_order:
        ds.context.execution_options.preserve_order = True
    if compute is None:
        fit_batch = functools.partial(_fit_batch, uuid.uuid4().hex, arguments)
        return ds.map_batches(fit_batch, batch_format="pyarrow", batch_size=batch_size)
    return ds.map_batches(
        FitBatch, fn_constructor_kwargs=arguments, batch_format="pyarrow", batch_size=batch_size, compute=compute
    )


def _read_range(batch: dict[str, Any]) -> dict[str, list[Any]]:
    rows: dict[str, list[Any]] = {"path": [], "offset": [], "text": []}
    for path, start, end in zip(batch["path"], batch["start"], batch["end"], strict=True):
        with open(path, "rb") as handle:
            for offset, _, line in lines_in(handle, int(start), int(end), 0):
                if line.strip():
                    rows["path"].append(path)
                    rows["offset"].append(offset)
                    rows["text"].append(line)
    return rows


def read_jsonl(paths: str | list[str], *, shard_bytes: int = DEFAULT_SHARD_BYTES) -> ray.data.Dataset:
    """A Dataset of the lines of JSONL files, read in byte ranges of ``shard_bytes``: one read task per range, so
    memory does not grow with the file (``ray.data.read_text`` reads a file in one task, whole).

    Columns: ``path``, ``offset`` (the line's byte offset in its file: with ``path``, a key to join results back
    to the input) and ``text``, the line as bytes (blank lines are left out; a line that is not UTF-8 is that
    row's error in ``fit_dataset``). Give it to ``fit_dataset(ds, column="text", ...)``. The files are split here,
    in the driver, by their size alone (a range holds the lines that start in it); every node that runs a task
    must see them at the same path (a shared file system).
    """
    try:
        import ray.data
    except ImportError as exc:
        raise ImportError(f"ctxwin.integrations.ray needs Ray Data: {install_hint('ray')}") from exc
    if isinstance(shard_bytes, bool) or not isinstance(shard_bytes, int) or shard_bytes < 1:
        raise InvalidInputError(f"shard_bytes must be a positive int, got {shard_bytes!r}")
    spans = [
        {"path": os.path.abspath(path), "start": start, "end": end}
        for path in ([paths] if isinstance(paths, str) else paths)
        for start, end in ranges(os.path.getsize(path), shard_bytes)
    ]
    if not spans:
        raise InvalidInputError(f"no lines to read: {paths!r} is empty")
    ranges_ds = ray.data.from_items(spans, override_num_blocks=len(spans))
    return ranges_ds.map_batches(_read_range, batch_size=1, batch_format="numpy")
