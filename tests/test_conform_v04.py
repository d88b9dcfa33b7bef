"""tlconform and the v0.4 corpus: --lang selects, v0.3 cases run in their v0.4 form (marked as
migrated, or skipped with the reason), a case may run on a grid of work-groups."""

from __future__ import annotations

import json
import shutil

import tlinterp
from fuzz.conform.cli import main, run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from tlinterp.impl import resolve as from_spec


def test_lang_selects_the_cases_of_one_version(capsys) -> None:
    """--lang v0.3 runs exactly the cases written in v0.3; --lang v0.4 those written in v0.4
    plus every v0.3 case in its v0.4 form, marked as migrated, or skipped with the reason."""
    all_cases = load_corpus(default_corpus(), "undefined/")
    v04 = {c.id for c in all_cases if c.lang == "v0.4"}
    assert v04 and len(v04) < len(all_cases)
    rc = main(["--impl", "interp", "--filter", "undefined/", "--lang", "v0.3", "-q", "--json",
               "-"])
    assert rc == 0
    assert {r["id"] for r in json.loads(capsys.readouterr().out)["cases"]} == \
        {c.id for c in all_cases} - v04
    rc = main(["--impl", "interp", "--filter", "undefined/", "--lang", "v0.4", "-q", "--json",
               "-"])
    captured = capsys.readouterr()
    assert rc == 0
    rows = {r["id"]: r for r in json.loads(captured.out)["cases"]}
    assert set(rows) == {c.id for c in all_cases}
    for case_id, r in rows.items():
        if case_id in v04:
            assert r["status"] == "pass" and "origin" not in r["tags"]
        elif r["status"] == "skip":  # e.g. lifetime_stop has no v0.4 form
            assert r["detail"].startswith("not migrated: ") and "v0.4" in r["detail"], r
        else:
            assert r["status"] == "pass" and r["tags"]["origin"] == ["migrated from v0.3"]
    assert sum(r["status"] == "skip" for r in rows.values()) < len(rows) - len(v04)
    assert "migrated from v0.3" in captured.err  # the "Cases by origin" table


def test_migrated_cases_run_their_v04_text_and_reproduce_it() -> None:
    """A migrated case gives the implementation the v0.4 text (no v0.3 spelling left), and
    its reproduce line writes that text first; an invalid v0.3 program is skipped."""
    from fuzz.conform.impl import case_job, reproduce
    from fuzz.conform.migrated import migrate_cases

    cases = [c for c in load_corpus(default_corpus())
             if c.id in ("valid/blas/gemm_f32_canonical_v0", "invalid/alloca_dynamic")]
    migrated, skipped = migrate_cases(cases)
    (m,) = migrated
    assert [(c.id, why) for c, why in skipped] == [
        ("invalid/alloca_dynamic", "not migrated: an invalid v0.3 program has no v0.4 form")]
    job = case_job(m)
    assert job.lang == "v0.4" and "arith." not in job.source and "constant" in job.source
    assert tlinterp.parse(job.source, lang="v0.4").lang == "v0.4"
    line = reproduce(from_spec("interp"), m)
    assert line.startswith("tlrun corpus/valid/blas/gemm_f32_canonical_v0.tl --emit ir --from "
                           "v0.3 --lang v0.4 > gemm_f32_canonical_v0.v04.tl && tlrun "
                           "gemm_f32_canonical_v0.v04.tl --args ")
    (v,) = run_all(from_spec("interp"), [m])
    assert v.status == "pass", v.detail


def test_a_case_may_run_on_a_grid(tmp_path, capsys) -> None:
    """"groups": [X, Y, Z] in a case description is a v0.4 grid: the case runs on it and its
    reproduce line says --groups X,Y,Z; the same case on as many groups in a row fails."""
    root = tmp_path / "c"
    for kind in ("invalid", "undefined"):
        (root / kind).mkdir(parents=True)
    (root / "valid" / "v04").mkdir(parents=True)
    for f in (default_corpus() / "valid" / "v04").glob("grid_3d.*"):
        shutil.copy(f, root / "valid" / "v04" / f.name)
    desc = root / "valid" / "v04" / "grid_3d.json"
    meta = json.loads(desc.read_text())
    assert meta["groups"] == [2, 3, 2]
    log = tmp_path / "r.log"
    assert main(["--impl", "interp", "--corpus", str(root), "-q", "--log", str(log)]) == 0
    assert "--groups 2,3,2" in log.read_text()
    meta["groups"] = 12
    desc.write_text(json.dumps(meta))
    assert main(["--impl", "interp", "--corpus", str(root), "-q"]) == 1
    capsys.readouterr()


def test_a_command_template_gets_the_grid_as_x_y_z(tmp_path) -> None:
    """A template's {groups} of a grid case is X,Y,Z (what tlrun --groups takes): tlrun as the
    template passes the grid case."""
    import sys

    root = tmp_path / "c"
    for kind in ("invalid", "undefined"):
        (root / kind).mkdir(parents=True)
    (root / "valid" / "v04").mkdir(parents=True)
    for f in (default_corpus() / "valid" / "v04").glob("grid_3d.*"):
        shutil.copy(f, root / "valid" / "v04" / f.name)
    template = (f"{sys.executable} -m tlinterp.cli {{kernel}} --args {{args}} --out {{out}} "
                "[--groups {groups}]")
    log = tmp_path / "t.log"
    assert main(["--impl", template, "--corpus", str(root), "-q", "--log", str(log)]) == 0
    assert "--groups 2,3,2" in log.read_text()
