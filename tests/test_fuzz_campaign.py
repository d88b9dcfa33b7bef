"""tlfuzz: command line, live view/summary, findings on disk, exit statuses."""

from __future__ import annotations

import argparse
import glob
import os

import pytest

from fuzz.campaign.cli import ALL_KINDS, main, parse_time, round_seed


def test_durations():
    assert parse_time("90") == 90 and parse_time("30s") == 30
    assert parse_time("10m") == 600 and parse_time("1h") == 3600
    with pytest.raises(argparse.ArgumentTypeError):
        parse_time("ten minutes")


def test_seeds_are_deterministic_per_job_and_round():
    assert round_seed(1, 0, 0) == round_seed(1, 0, 0)
    assert len({round_seed(1, j, k) for j in range(3) for k in range(3)}) == 9


def test_bad_command_lines_exit_2(capsys):
    assert main(["--jobs", "0"]) == 2
    assert main(["--mutation", "nonsense"]) == 2
    assert main(["--time", "soon"]) == 2
    assert "tlfuzz" in capsys.readouterr().err


def test_front_end_campaign_runs_and_summarises(tmp_path, capsys):
    out = tmp_path / "findings"
    assert main(["--frontend", "--time", "4s", "--out", str(out), "--seed", "5",
                 "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "summary" in err and "cases/s" in err and "instruction coverage" in err
    assert os.path.isdir(out)


@pytest.mark.opencl
def test_differential_campaign_saves_shrunk_findings(tmp_path, capsys):
    out = tmp_path / "findings"
    status = main(["--time", "3s", "--out", str(out), "--batch", "2", "--rounds", "1",
                   "--shrink-time", "10", "--mutation", "crash", "--jobs", "1"])
    assert status == 1
    saved = glob.glob(str(out / "backend-crash-*.tl"))
    assert saved
    cmd = open(saved[0][:-3] + ".txt").readline()
    assert cmd.startswith("tlfuzz reproduce ") and "--impl opencl" in cmd
    assert "backend-crash" in capsys.readouterr().err
    assert "Gemm" in ALL_KINDS and "Gemm.atomic" in ALL_KINDS


def test_a_finding_found_twice_counts_once():
    """Two jobs (or two searches) that shrink to the same kernel and arguments save one file
    (named by their hash): the summary counts it once and says it was found again."""
    import queue

    from rich.console import Console

    from fuzz.campaign.cli import Tally, _drain

    q: queue.Queue = queue.Queue()
    for job in (0, 1):
        q.put(("finding", job, "mismatch", "/f/mismatch-0123456789ab", "differs"))
    q.put(("finding", 1, "backend-crash", "/f/backend-crash-ba9876543210", "crashed"))
    tally = Tally()
    _drain(q, tally, 0.1)
    assert [p for _, p, _ in tally.findings] == ["/f/mismatch-0123456789ab",
                                                 "/f/backend-crash-ba9876543210"]
    console = Console(width=200, record=True)
    console.print(tally.table("t"))
    assert "backend-crash: 1, mismatch: 1 (1 found again, saved once)" in console.export_text()
