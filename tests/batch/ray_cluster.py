"""A Ray cluster of several nodes on this machine, started as the multi-node recipe of docs/batch.md says:
``ray start --head`` once, ``ray start --address HEAD`` for every other node, each on a loopback address of its own
(127.0.0.2, 127.0.0.3, ...) with its own ports.

Every node runs ``ray start --block`` in a session of its own, under a temporary folder of its own, so that the
cluster is stopped by signalling those sessions (never with ``ray stop``, which stops every Ray on the machine),
and any process left behind is found by that folder in its command line.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
# Each node on its own loopback address (127.0.0.2, .3, ...): Ray rewrites "127.0.0.1" in an address to the
# machine's network address, where nothing listens.
HEAD_IP = "127.0.0.2"
STOP_TIMEOUT = 10.0  # for a graceful stop; what is still running then is killed


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _node_ports() -> list[str]:
    manager, objects, agent, agent_grpc, runtime_env, metrics = free_ports(6)
    first = free_ports(1)[0] // 100 * 100  # worker ports: a small range of their own, unlikely to be taken
    return [
        f"--node-manager-port={manager}",
        f"--object-manager-port={objects}",
        f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--runtime-env-agent-port={runtime_env}",
        f"--metrics-export-port={metrics}",
        f"--min-worker-port={first}",
        f"--max-worker-port={first + 40}",
    ]


def _ours(folder: str) -> list[int]:
    """Processes whose command line names ``folder``: what the nodes started, wherever they were reparented."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if folder.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    pids.append(int(entry))
    return pids


def cluster_env(base: dict[str, str]) -> dict[str, str]:
    """``base`` with a token of the cluster's own: Ray turns token authentication on whenever ~/.ray/auth_token
    exists, so the nodes and the driver are given one explicitly, whatever the machine holds."""
    return {**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0"}


@contextlib.contextmanager
def local_cluster(nodes: int, cpus_per_node: int, env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """Start the cluster with ``env`` (from ``cluster_env``, also the driver's); yield the head's address and the
    nodes' folder; stop every process it started."""
    folder = tempfile.mkdtemp(prefix="cwray-", dir="/tmp")  # short: Ray's socket paths live under it
    common = ["--block", f"--num-cpus={cpus_per_node}", "--object-store-memory=200000000", "--disable-usage-stats"]
    started: list[subprocess.Popen[bytes]] = []
    try:
        address = _start_head(folder, common, env, started)
        for node in range(1, nodes):
            started.append(_ray_start([f"--address={address}", f"--node-ip-address=127.0.0.{2 + node}", *common],
                                      env, folder))
        yield address, folder
    finally:
        for process in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        while _ours(folder) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in _ours(folder):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for process in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


HEAD_ATTEMPTS = 3


def _ray_start(arguments: list[str], env: dict[str, str], folder: str) -> subprocess.Popen[bytes]:
    with open(Path(folder) / "ray-start.err", "ab") as errors:  # what a failed start said, for the error below
        return subprocess.Popen([RAY, "start", *arguments, *_node_ports()], stdout=subprocess.DEVNULL, stderr=errors,
                                env=env, start_new_session=True)


def _start_head(folder: str, common: list[str], env: dict[str, str], started: list[subprocess.Popen[bytes]]) -> str:
    """The head node's address once it listens. Its ports are free when chosen but may be taken before Ray binds
    them (the suite's other tests open ports too): a head that exits before listening is started again on new
    ones."""
    for _attempt in range(HEAD_ATTEMPTS):
        head_port, dashboard_port = free_ports(2)
        head = _ray_start(["--head", f"--port={head_port}", f"--dashboard-port={dashboard_port}",
                           "--include-dashboard=false", f"--temp-dir={folder}", f"--node-ip-address={HEAD_IP}",
                           *common], env, folder)
        started.append(head)
        if _listening(head_port, head):
            return f"{HEAD_IP}:{head_port}"
        for pid in _ours(folder):  # what the failed start left: the next one starts clean
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    said = (Path(folder) / "ray-start.err").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"ray start --head exited {HEAD_ATTEMPTS} times before listening; it said:\n{said}")


def _listening(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> bool:
    """Whether the head listens on ``port``; False when it exited first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection((HEAD_IP, port), timeout=1):
            return True
        time.sleep(0.2)
    raise RuntimeError(f"the head node did not listen on port {port} within {timeout:.0f} s")
