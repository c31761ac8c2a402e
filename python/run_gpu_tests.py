"""Runs the Python tests marked ``gpu`` (ctest's python_tests_gpu).

Usage: run_gpu_tests.py [pytest arguments...]; ``-m gpu`` is added.

Exits 77 (ctest's SKIP_RETURN_CODE for this test) after printing a line that starts
with SKIPPED when nothing ran on a GPU: no test is marked gpu (pytest's exit code 5),
or every selected test skipped itself (no CUDA GPU seen). Otherwise pytest's own exit
code: a failure or an error still fails, whatever else was skipped.
"""
import sys

import pytest

SKIP = 77


class _Outcomes:
    def __init__(self):
        self.ran = 0  # tests whose body ran: passed, failed, errors, xfail, xpass
        self.skipped = 0

    def pytest_terminal_summary(self, terminalreporter):
        stats = terminalreporter.stats
        self.ran = sum(len(stats.get(k, [])) for k in ("passed", "failed", "error", "xfailed", "xpassed"))
        self.skipped = len(stats.get("skipped", []))


def main(argv):
    outcomes = _Outcomes()
    rc = int(pytest.main(["-m", "gpu", *argv], plugins=[outcomes]))
    if rc == int(pytest.ExitCode.NO_TESTS_COLLECTED):
        print("SKIPPED: no Python test is marked gpu")
        return SKIP
    if rc == int(pytest.ExitCode.OK) and outcomes.ran == 0 and outcomes.skipped > 0:
        print(f"SKIPPED: all {outcomes.skipped} gpu-marked Python tests skipped themselves (no CUDA GPU seen)")
        return SKIP
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
