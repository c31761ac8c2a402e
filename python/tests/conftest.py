"""Shared fixtures: a printed random seed, the devices under test, and the `gpu`
marker (tests that need a CUDA GPU skip themselves where gaio sees none; where the
environment sets GAIO_REQUIRE_GPU=1, as scripts/gpu-check does, they fail instead,
quoting why gaio's CUDA backend did not start)."""
from __future__ import annotations

import os
import random

import pytest

import gaio


def _has_gpu() -> bool:
    return any(d.kind == "cuda" for d in gaio.devices())


HAS_GPU = _has_gpu()
#: GAIO_REQUIRE_GPU set (to anything but "" or "0"): a missing GPU fails the gpu tests
REQUIRE_GPU = os.environ.get("GAIO_REQUIRE_GPU", "") not in ("", "0")


def _no_gpu_reason() -> str:
    return "no CUDA GPU (CUDA backend: " + gaio.backend_status("cuda")[1] + ")"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_GPU or REQUIRE_GPU:  # under GAIO_REQUIRE_GPU, pytest_runtest_setup fails them
        return
    why = "SKIPPED: " + _no_gpu_reason()
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=why))


def pytest_runtest_setup(item: pytest.Item) -> None:
    if REQUIRE_GPU and not HAS_GPU and "gpu" in item.keywords:
        pytest.fail(f"GAIO_REQUIRE_GPU={os.environ['GAIO_REQUIRE_GPU']} is set but gaio sees {_no_gpu_reason()}",
                    pytrace=False)


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


@pytest.fixture(scope="session")
def torch_fp32():
    """torch with torchvision and a GPU (else the test skips), TF32 off: the fp32
    reference of the model tests (TF32 would put torch's own error near 1e-3)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    if not torch.cuda.is_available():
        pytest.skip("SKIPPED: torch sees no GPU")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch
