"""Shared fixtures: a printed random seed, the devices under test, and the `gpu`
marker (tests that need a CUDA GPU skip themselves where gaio sees none)."""
from __future__ import annotations

import os
import random

import pytest

import gaio


def _has_gpu() -> bool:
    return any(d.kind == "cuda" for d in gaio.devices())


HAS_GPU = _has_gpu()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_GPU:
        return
    why = "SKIPPED: no CUDA GPU (" + gaio.backend_status("cuda")[1] + ")"
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture
def seed() -> int:
    """A random seed, printed (pytest shows it for failing tests); GAIO_TEST_SEED fixes it."""
    s = int(os.environ.get("GAIO_TEST_SEED") or str(random.SystemRandom().randrange(1 << 32)), 0)
    print(f"seed {s} (GAIO_TEST_SEED={s} repeats this run)")
    return s


@pytest.fixture
def rng(seed: int):
    import numpy as np
    return np.random.default_rng(seed)


DEVICES = ["cpu", pytest.param("cuda:0", marks=pytest.mark.gpu)]


@pytest.fixture(params=DEVICES)
def dev(request) -> str:
    """Each device kind under test: the host, and the first GPU where there is one."""
    return request.param
