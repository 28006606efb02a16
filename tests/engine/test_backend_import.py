"""`get_backend` from several threads while the backend module is still being imported.

A Dask worker's threads (or a user's) can start their first compute together. The
one that imports ``colbridge.backends.cpu`` puts the module in ``sys.modules``
before its body has run; another thread must wait for the import to finish, not
take the half-made module (``AttributeError: partially initialized module``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import importlib.abc, importlib.machinery, sys, threading, time

    import colbridge.backends as backends

    class SlowLoader(importlib.abc.Loader):
        # the real loader, after a pause with the empty module already in sys.modules
        def __init__(self, real):
            self.real = real
        def create_module(self, spec):
            return self.real.create_module(spec)
        def exec_module(self, module):
            time.sleep(0.5)
            self.real.exec_module(module)

    class SlowFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "colbridge.backends.cpu":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            spec.loader = SlowLoader(spec.loader)
            return spec

    sys.meta_path.insert(0, SlowFinder())
    got = {}

    # whether the module each thread got was whole when it got it
    def first():
        got["first"] = hasattr(backends.get_backend("cpu"), "reduce_partials")

    def second():
        time.sleep(0.1)  # the first thread is inside the module's import now
        got["second"] = hasattr(backends.get_backend("cpu"), "reduce_partials")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(got["first"], got["second"])
    """
)


def test_a_thread_waits_for_the_backend_another_thread_is_importing() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
