"""Runs the Python tests marked ``gpu`` (ctest's python_tests_gpu).

Usage: run_gpu_tests.py [pytest arguments...]; ``-m gpu`` is added.

When nothing ran on a GPU (no test is marked gpu: pytest's exit code 5; or every
selected test skipped itself: no CUDA GPU seen) it prints a line that starts with
"SKIPPED:" and exits 77 (ctest's SKIP_RETURN_CODE for this test), unless the
environment sets GAIO_REQUIRE_GPU=1 (scripts/gpu-check): then it says so and fails
(exit 1). Otherwise pytest's own exit code: a failure or an error still fails, whatever
else was skipped; tests that skipped themselves among others that ran are counted on
the last line, with their reasons.
"""
import os
import sys

import pytest

SKIP = 77


def require_gpu() -> bool:
    """Whether GAIO_REQUIRE_GPU is set (to anything but "" or "0")."""
    return os.environ.get("GAIO_REQUIRE_GPU", "") not in ("", "0")


class _Outcomes:
    def __init__(self):
        self.ran = 0  # tests whose body ran: passed, failed, errors, xfail, xpass
        self.skipped = 0
        self.reasons = {}  # skip reason -> count

    def pytest_terminal_summary(self, terminalreporter):
        stats = terminalreporter.stats
        self.ran = sum(len(stats.get(k, [])) for k in ("passed", "failed", "error", "xfailed", "xpassed"))
        skipped = stats.get("skipped", [])
        self.skipped = len(skipped)
        for rep in skipped:
            longrepr = getattr(rep, "longrepr", None)
            why = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
            why = why[len("Skipped: "):] if why.startswith("Skipped: ") else why
            self.reasons[why] = self.reasons.get(why, 0) + 1


def _no_gpu_run(why: str) -> int:
    """Nothing ran on a GPU: a skip, or a failure under GAIO_REQUIRE_GPU."""
    if require_gpu():
        print(f"FAILED: GAIO_REQUIRE_GPU={os.environ['GAIO_REQUIRE_GPU']} is set but {why}")
        return 1
    print(f"SKIPPED: {why}")
    return SKIP


def main(argv):
    outcomes = _Outcomes()
    rc = int(pytest.main(["-m", "gpu", *argv], plugins=[outcomes]))
    if rc == int(pytest.ExitCode.NO_TESTS_COLLECTED):
        return _no_gpu_run("no Python test is marked gpu")
    if rc == int(pytest.ExitCode.OK) and outcomes.ran == 0 and outcomes.skipped > 0:
        reasons = "; ".join(sorted(outcomes.reasons))
        return _no_gpu_run(f"all {outcomes.skipped} gpu-marked Python tests skipped themselves ({reasons})")
    if outcomes.skipped:
        print(f"python gpu tests: {outcomes.ran} ran, {outcomes.skipped} skipped themselves:")
        for why, n in sorted(outcomes.reasons.items()):
            print(f"  {n} x {why}")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
