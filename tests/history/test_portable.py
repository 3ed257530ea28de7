"""``import ctxwin`` where ``fcntl`` does not exist (Windows): only the JSONL history's lock needs it."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _run_without_fcntl(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter in which ``import fcntl`` raises ImportError, as on Windows."""
    prelude = "import sys\nsys.modules['fcntl'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_import_ctxwin_without_fcntl() -> None:
    result = _run_without_fcntl(
        """
        import ctxwin
        from ctxwin.history import FileChatMessageHistory, InMemoryChatMessageHistory
        from ctxwin.messages import HumanMessage
        history = InMemoryChatMessageHistory()
        history.add_messages([HumanMessage("hi")])
        print(ctxwin.trim_messages(history.messages, max_tokens=50, token_counter="gpt-4o")[0].content)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hi"


@pytest.mark.slow
def test_jsonl_history_without_fcntl_says_why_at_first_use(tmp_path: Path) -> None:
    result = _run_without_fcntl(
        f"""
        from ctxwin.history import FileChatMessageHistory
        from ctxwin.messages import HumanMessage
        history = FileChatMessageHistory({str(tmp_path / "chat.jsonl")!r})
        for action in (lambda: history.add_messages([HumanMessage("hi")]), lambda: history.messages):
            try:
                action()
            except NotImplementedError as exc:
                print(exc)
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert all("needs fcntl" in line and "SQLiteChatMessageHistory" in line for line in lines)
