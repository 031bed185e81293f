"""scripts/disk_check.sh: the whole test run says before it starts when the disk is short."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "disk_check.sh"


def _run(tmp_path: Path, need: int, minimum: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECITATION_CACHE_DIR": str(tmp_path / "cache"),
           "TMPDIR": str(tmp_path), "RECITATION_DISK_NEED_GB": str(need),
           "RECITATION_DISK_MIN_GB": str(minimum)}
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          check=False)


def _free_gib(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize // 2**30


def test_enough_room_passes_quietly(tmp_path: Path) -> None:
    result = _run(tmp_path, need=0, minimum=0)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    # df (the script) and statvfs agree, give or take what other tests write meanwhile
    reported = int(result.stdout.split("disk: ")[1].split(" GiB")[0])
    assert abs(reported - _free_gib(tmp_path)) <= 3
    assert (tmp_path / "cache").is_dir()


def test_under_the_need_warns_and_names_the_fix(tmp_path: Path) -> None:
    result = _run(tmp_path, need=_free_gib(tmp_path) + 50, minimum=0)
    assert result.returncode == 0
    assert "warning: under" in result.stderr
    assert "RECITATION_CACHE_DIR and TMPDIR" in result.stderr


def test_under_the_minimum_stops_before_installing(tmp_path: Path) -> None:
    result = _run(tmp_path, need=0, minimum=_free_gib(tmp_path) + 50)
    assert result.returncode == 1
    assert "error: under" in result.stderr and "Free space there" in result.stderr
