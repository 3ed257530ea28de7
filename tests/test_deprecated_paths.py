"""The previous release's module paths and top-level names keep working for one release: each warns, naming where to
import from, and gives the very object the new place holds (so isinstance, monkeypatching and old pickles work)."""

from __future__ import annotations

import importlib
import importlib.util
import pickle
import sys

import pytest

import ctxwin
from ctxwin._deprecated import MovedFinder, public_home
from ctxwin._moved import MOVED
from ctxwin.messages import HumanMessage


def forget(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Import ``names`` afresh in this test (another test may have imported them already); restored afterwards."""
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.mark.parametrize(("old", "new"), [
    ("ctxwin.counters.base", "ctxwin.counters._base"),  # a module
    ("ctxwin.counters.approximate", "ctxwin.counters._approximate"),  # a package
    ("ctxwin.counters.approximate.counter", "ctxwin.counters._approximate.counter"),  # inside a package that moved
    ("ctxwin.messages.forms", "ctxwin.messages._forms"),
    ("ctxwin.plugins", "ctxwin._plugins"),
])
def test_an_old_path_warns_and_is_the_moved_module(monkeypatch: pytest.MonkeyPatch, old: str, new: str) -> None:
    parent = old.rpartition(".")[0]
    forget(monkeypatch, old, parent)
    if parent in MOVED:  # imported first, warning on its own
        with pytest.deprecated_call(match=rf"^{parent} is deprecated"):
            importlib.import_module(parent)
    with pytest.deprecated_call(match=rf"^{old} is deprecated .*: use {public_home(old)}, whose __all__"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__ is not None and module.__spec__.name == new


def test_from_an_old_path_gives_the_same_class(monkeypatch: pytest.MonkeyPatch) -> None:
    forget(monkeypatch, "ctxwin.counters.approximate", "ctxwin.counters.approximate.counter")
    namespace: dict[str, object] = {}
    with pytest.deprecated_call():
        exec("from ctxwin.counters.approximate.counter import ApproximateCounter", namespace)
    assert namespace["ApproximateCounter"] is ctxwin.counters.ApproximateCounter
    assert isinstance(ctxwin.get_counter("approximate"), namespace["ApproximateCounter"])  # type: ignore[arg-type]


def test_the_warning_points_at_the_import(monkeypatch: pytest.MonkeyPatch) -> None:
    forget(monkeypatch, "ctxwin.history.reducer")
    with pytest.deprecated_call() as caught:
        exec(compile("import ctxwin.history.reducer", __file__, "exec"), {})
    assert [w.filename for w in caught] == [__file__]


def test_every_old_name_maps_to_a_module_that_exists() -> None:
    """Checked without importing them all (the integrations' frameworks, the bench's plotting)."""
    finder = MovedFinder()
    for old, new in MOVED.items():
        assert importlib.util.find_spec(new) is not None, new
        spec = finder.find_spec(old)
        assert spec is not None and spec.name == old
        home = public_home(old)  # the package the warning sends users to: public, and a prefix of the new name
        assert not any(part.startswith("_") for part in home.split(".")) and new.startswith(home + "."), old


def test_a_name_that_never_was_a_module_is_still_not_found() -> None:
    assert MovedFinder().find_spec("ctxwin.counters.nope") is None
    with pytest.raises(ModuleNotFoundError, match=r"ctxwin\.counters\.nope"):
        importlib.import_module("ctxwin.counters.nope")


def test_a_pickle_of_the_previous_release_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pickle names each class by its module: the previous release's say ``ctxwin.messages.human``."""
    forget(monkeypatch, "ctxwin.messages.human", "ctxwin.planner.report")
    message = HumanMessage("a question", id="m1")
    plan = ctxwin.fit([message], counter="approximate", context_window=1000)
    for value, new, old in ((message, b"ctxwin.messages._human", b"ctxwin.messages.human"),
                            (plan, b"ctxwin.planner._report", b"ctxwin.planner.report")):
        written = pickle.dumps(value, protocol=0)  # protocol 0 writes module names as plain lines
        assert new + b"\n" in written
        with pytest.deprecated_call(match=old.decode()):
            read = pickle.loads(written.replace(new + b"\n", old + b"\n"))
        assert type(read) is type(value) and read == value


def test_a_name_ctxwin_exported_before_warns_and_is_its_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.deprecated_call(match=r"^ctxwin.AIMessageChunk is deprecated .*: import it from ctxwin.messages$"):
        chunk = ctxwin.AIMessageChunk  # type: ignore[attr-defined]
    assert chunk is ctxwin.messages.AIMessageChunk
    with pytest.deprecated_call(match="ctxwin.StepContext"):
        exec("from ctxwin import StepContext", {})
    assert "AIMessageChunk" not in ctxwin.__all__ and "AIMessageChunk" not in dir(ctxwin)


def test_the_deprecated_names_are_not_public_and_each_is_its_packages() -> None:
    for name, home in ctxwin._DEPRECATED_HOME.items():
        assert name not in ctxwin.__all__ and name in importlib.import_module(home).__all__, name
