"""Suite-wide setup.

Third-party plugins installed on the machine never leak into the tests: plugins load once per process, so this is
set before anything asks for a counter; tests that need a plugin register it explicitly (or install one into a
subprocess of their own).

Nothing reaches for the network: sockets connect only to 127.0.0.1 (pytest-socket, pyproject.toml's addopts), and
the libraries that would fetch data at import or first use are told they are offline, in this process and the
subprocesses it starts (LiteLLM's model cost map, the Hugging Face Hub).

CI runs the property tests on a fixed sequence of examples, so a red run is reproducible and a landing never depends
on luck; locally they explore new examples on every run. ``--hypothesis-profile=fuzz`` runs many more examples.
"""

import os

from hypothesis import settings

os.environ["CTXWIN_LOAD_PLUGINS"] = ""
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

settings.register_profile("ci", derandomize=True, print_blob=True)
# Long fuzzing of the property tests that scale with the profile (tests/approximate/test_safe_adversarial.py).
settings.register_profile("fuzz", max_examples=20_000, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
