"""A writer process for the concurrency and crash tests: appends messages and acknowledges each on stdout.

Usage: python writer.py {sqlite|jsonl} PATH WRITER COUNT [PAD]. Prints ``ack <i>`` only after ``add_message``
returned for message ``i`` (content ``"<WRITER>:<i>"`` plus PAD bytes of padding); COUNT 0 means forever.
"""

from __future__ import annotations

import itertools
import sys

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.history._sqlite import SQLiteChatMessageHistory
from ctxwin.messages import HumanMessage


def main() -> None:
    kind, path, writer, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    pad = "x" * int(sys.argv[5]) if len(sys.argv) > 5 else ""
    history: BaseChatMessageHistory = (
        SQLiteChatMessageHistory(path, "shared") if kind == "sqlite" else FileChatMessageHistory(path)
    )
    print("ready", flush=True)
    for i in itertools.count() if count == 0 else range(count):
        history.add_message(HumanMessage(f"{writer}:{i}", additional_kwargs={"pad": pad} if pad else {}))
        print(f"ack {i}", flush=True)


if __name__ == "__main__":
    main()
