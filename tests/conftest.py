from __future__ import annotations

from collections.abc import Iterator

import pytest

from crawlproj.sandbox.harness import SandboxProcess


@pytest.fixture
def sandbox_factory(tmp_path) -> Iterator:
    """Start real sandbox servers (free loopback ports); all are stopped afterwards."""
    started: list[SandboxProcess] = []

    def start(*args: str) -> SandboxProcess:
        proc = SandboxProcess(*args, seeds_file=tmp_path / f"seeds{len(started)}.txt").start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()
