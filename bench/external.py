"""Throughput of an external implementation (`opencl-c:`) against the built-in `opencl` one,
measured in the same run on the same corpus cases, and where an external case's time goes.

    python bench/external.py [--cases 60] [--jobs CORES] [--device pocl]

Rows (tlconform's run_all, --jobs threads, verdicts judged against the corpus):
  opencl                  the built-in lowering (one case at a time: it is not parallel)
  opencl-c (cached)       a shell "compiler" printing our stored lowering of the kernel: the
                          cost of running any external compiler's code here, with almost no
                          compiler time
  opencl-c (tlrun)        `python3 -m tlinterp.cli {tl} --emit opencl` as the compiler: a
                          Python start and our lowering per case on top
pocl's and pyopencl's build caches are off (POCL_KERNEL_CACHE=0, PYOPENCL_NO_CACHE=1), so no
row reuses another's builds.
"CPU s/case" counts this process and its ended children (compilers, workers); jobs / that is
the rate the work allows on idle cores (the built-in row runs one case at a time, so its bound
is 1 / CPU s).
Stages: one case at a time, the mean of the compiler run and of the build and launch in the
worker, and the worker's start-up (paid once per thread). Target: >= 4 cases/s (2 cores).

    python bench/external.py --impl 'spirv:tinytc -d tgl {tl}' --device intel \
        --profile tinytc-0.4.0-tgl-new-bugs --cases 40

With --impl, where a campaign's case goes instead (`stage_breakdown`): generated kernels of
the profile (no corpus), each through every stage alone, timed one case at a time, in CPU
seconds of every process that worked on it (this one, the compiler, the kept worker:
`tree_cpu_seconds`; on a shared machine the wall-clock, also shown, depends on the others)
and their shares: generation (the generator, printed, parsed and checked back), the
interpreter, the compiler (its process started, run and read: `compile_code`), the device
build (the worker's first build and launch of the code less its second, which reuses the
build), the launch (the second), the process overhead (a process start of `true` through
the same runner, the part of the compiler's stage that is no compiler); then the whole
`impl.run` of a fresh case, compiler + build + launch alone against one program per batch,
the campaign's own generation (its Hypothesis searches, `hunt_generation`), and the rate
those CPU seconds allow on 2 idle cores (2 / CPU s per case).

    python bench/external.py --impl 'spirv:tinytc {tl}' --device intel \
        --profile tinytc-0.4.0-new-bugs --campaign 100

With --campaign CASES, one campaign job's steady state instead (`campaign_cpu`): its
Hypothesis searches through a real sandbox and worker, start-up left out, shrinking
included: CPU s/case and the rate 2 idle cores allow.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import sys
import tempfile
import time

# this directory holds bench/fuzz.py, named like the `fuzz` package: keep it off the path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


def store_lowerings(cases, directory: str) -> str:
    """Our lowering of every case's kernel, named by the SHA-1 of its source; the `opencl-c:`
    spec of a shell script that prints it (exit 2 with a diagnostic for a kernel without)."""
    import tlgpu
    import tlinterp

    for case in cases:
        text = case.source()
        program = tlinterp.check(tlinterp.parse(text, filename=case.kernel.name))
        name = hashlib.sha1(text.encode()).hexdigest()
        with open(os.path.join(directory, name + ".cl"), "w") as f:
            f.write(tlgpu.lower(program, case.func))
    script = (f'f={directory}/$(sha1sum < "$1" | cut -c1-40).cl; test -f "$f" || '
              '{ echo "$1:1.1-2: no lowering stored" >&2; exit 2; }; cat "$f"')
    return f"opencl-c:sh -c '{script}' sh {{tl}}"


def cpu_seconds() -> float:
    """User + system time of this process and of its children that ended (compilers,
    workers): on a shared machine the wall-clock rate depends on the others, this does not."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def tree_cpu_seconds() -> float:
    """cpu_seconds() plus the CPU time of the children still running (a kept worker that
    builds and launches) and of what they reaped, from /proc: a stage timed by the change of
    this is charged whatever process did its work; the reading's own cost is left out."""
    from tlinterp.impl.shutdown import process_table

    t0 = time.process_time()
    total = cpu_seconds()
    table = process_table()
    parents = {pid: parent for pid, (parent, _) in table.items()}
    mine, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in mine} - mine
        mine |= more
        grew = bool(more)
    _READING[0] += time.process_time() - t0
    return total + sum(table[pid][1] for pid in mine if pid != os.getpid()) - _READING[0]


_READING = [0.0]  # CPU seconds tree_cpu_seconds() spent reading /proc so far


STAGES = ("generation", "interpreter", "compiler", "device build", "launch",
          "process overhead")


def hunt_generation(profile: str, cases: int, batch: int = 8, seed: int = 0) -> float:
    """CPU seconds per case of the campaign's own generation: its Hypothesis searches
    (fuzz.campaign.hunt, batches of up to `batch` kernels) with a stand-in sandbox that runs
    nothing, until `cases` cases were drawn (what `sample_function` does not pay: Hypothesis'
    draws, and the examples it drops)."""
    from fuzz.campaign.hunt import HuntOptions, hunt
    from fuzz.profiles import load

    class NoRun:
        completed = 0

        def __init__(self) -> None:
            self.cases = 0

        def run(self, batch_cases, config) -> list:
            self.cases += len(batch_cases)
            self.completed = len(batch_cases)
            return []

    lang = load(profile).lang or "v0.3"
    opts = HuntOptions(batch=batch, impl=("stand-in", None),
                       params={"profile": profile, "lang": lang})
    stub = NoRun()
    c0 = time.process_time()
    k = 0
    while stub.cases < cases:
        hunt(opts, seed + k, 10, sandbox=stub)
        k += 1
    return (time.process_time() - c0) / stub.cases


def campaign_cpu(spec: str, device: str, profile: str, cases: int,
                 build_options: str = "-cl-std=CL2.0 -cl-mad-enable",
                 reject_status: int = 1, seed: int = 1, batch: int = 8) -> dict:
    """A campaign job's steady state: its Hypothesis searches (fuzz.campaign.hunt) through
    a real sandbox and kept worker, as one `tlfuzz -j` job runs them, until `cases` cases
    ran (shrinking runs count, as in tlfuzz's cases/s; "shrunk": the searches that found
    something and shrank it); CPU seconds of every process per
    case ("cpu"), wall seconds per case ("wall"), with the start-up (the sandbox's and the
    worker's, a warm-up batch) left out: what `2 / cpu` cases/s two idle cores allow."""
    from fuzz.campaign.hunt import HuntOptions, hunt
    from fuzz.campaign.sandbox import Sandbox
    from fuzz.profiles import load
    from tlinterp.impl import ImplOptions

    impl = (spec, ImplOptions(device=device, build_options=build_options,
                              reject_status=(reject_status,)))
    opts = HuntOptions(device=device, batch=batch, impl=impl, random_configs=False,
                       triage_time=0, params={"profile": profile,
                                              "lang": load(profile).lang or "v0.3"})
    count = [0]

    def progress(n: int, _cov: set) -> None:
        count[0] += n

    with Sandbox(device, opts.timeout, None, impl) as sandbox:
        hunt(opts, seed + 10**6, 1, sandbox=sandbox)  # start-up: not a case's
        count[0] = 0
        t0, c0 = time.perf_counter(), tree_cpu_seconds()
        k = 0
        found = 0
        while count[0] < cases:
            found += bool(hunt(opts, seed + k, 10, progress, sandbox=sandbox))
            k += 1
        wall, cpu = time.perf_counter() - t0, tree_cpu_seconds() - c0
    return {"cases": count[0], "cpu": cpu / count[0], "wall": wall / count[0],
            "shrunk": found}


def stage_breakdown(spec: str, device: str, profile: str, cases: int,
                    build_options: str = "-cl-std=CL2.0 -cl-mad-enable",
                    reject_status: int = 1, seed: int = 0, batches: int = 4,
                    batch: int = 8) -> dict:
    """Seconds per case of each of STAGES, wall-clock (`got[stage]`) and CPU of every
    process that worked on it (`got["cpu"][stage]`, tree_cpu_seconds), means over the cases
    that built and ran, and of the whole `impl.run` ("run"), over `cases` kernels
    `sample_function(seed + i, profile=profile)` gives; "cases" counts those, "ran" those
    that ran; "hunt generation": CPU seconds per case of the campaign's Hypothesis
    generation (hunt_generation). Then `batches` batches of `batch` fresh kernels each run
    twice, compiled and built per case and as one program (`batch_code`): seconds per case
    of each ("alone", "batched"; CPU: "cpu alone", "cpu batched") over the "compared" cases
    of batches whose verdicts agree."""
    from fuzz.campaign.harness import _interp
    from fuzz.strategies import case_of, sample_function
    from tlgpu.lowering.callconv import convention_of
    from tlgpu.lowering.function import kernel_name
    from tlgpu.runtime.foreign import ForeignJob
    from tlinterp.impl import ImplOptions, Job, resolve
    from tlinterp.impl.command import run_command

    def now() -> tuple[float, float]:
        return time.perf_counter(), tree_cpu_seconds()

    impl = resolve(spec, ImplOptions(device=device, build_options=build_options,
                                     reject_status=(reject_status,)))
    sums = dict.fromkeys((*STAGES, "run"), 0.0)
    cpu = dict.fromkeys(STAGES, 0.0)
    ran = 0
    try:
        impl.runner.device_info()  # the worker's start-up, paid once: not a case's
        for i in range(cases):
            t0 = now()
            func, args, groups, _ = sample_function(seed + i, profile=profile)
            case = case_of(func, args, groups, profile)
            t1 = now()
            _interp(case)
            t2 = now()
            job = Job(case.source, case.args, func=case.func, groups=case.groups,
                      filename=f"{case.func}.tl", program=case.program, lang=case.lang)
            code, _ = impl.compile_code(job, 60)
            t3 = now()
            if code is None:
                continue
            fn = case.program.functions[0]
            fjob = ForeignJob(impl.kind, impl._code(code), fn, kernel_name(fn), impl.size,
                              impl.options.build_options, dict(job.args), job.groups,
                              convention_of(case.program))
            first = impl.runner.run(fjob, 60)
            t4 = now()
            impl.runner.run(fjob, 60)
            t5 = now()
            run_command(["true"], 60)
            t6 = now()
            if first.status != "ok":
                continue
            ran += 1
            for into, k in ((sums, 0), (cpu, 1)):
                for stage, dt in zip(STAGES, (
                        t1[k] - t0[k], t2[k] - t1[k], t3[k] - t2[k],
                        (t4[k] - t3[k]) - (t5[k] - t4[k]), t5[k] - t4[k], t6[k] - t5[k])):
                    into[stage] += dt
        # the whole path once more on fresh cases (nothing built yet), for what joins stages
        n = 0
        for i in range(min(cases, 10)):
            func, args, groups, _ = sample_function(seed + cases + i, profile=profile)
            case = case_of(func, args, groups, profile)
            job = Job(case.source, case.args, func=case.func, groups=case.groups,
                      filename=f"{case.func}.tl", program=case.program, lang=case.lang)
            t0 = time.perf_counter()
            o = impl.run(job, 60)
            if o.status == "ok":
                sums["run"] += time.perf_counter() - t0
                n += 1
        # one compiler run and one device build per batch (batch_code) against one each per
        # case, on the same fresh cases in the same worker, which order first alternating
        alone = batched = cpu_alone = cpu_batched = 0.0
        runs = 0
        impl.runner.close()  # a fresh worker: no build kept from the cases above
        for g in range(batches):
            jobs = []
            for i in range(batch):
                func, args, groups, _ = sample_function(seed + 2 * cases + g * batch + i,
                                                        name=f"k{i}", profile=profile)
                case = case_of(func, args, groups, profile)
                jobs.append(Job(case.source, case.args, func=case.func, groups=case.groups,
                                filename=f"{case.func}.tl", program=case.program,
                                lang=case.lang))
            timed = {}
            for way in (("alone", "batched") if g % 2 == 0 else ("batched", "alone")):
                t0 = now()
                code = impl.batch_code(jobs, 60) if way == "batched" else None
                outs = [impl.run(j, 60, code=code) if code is not None else impl.run(j, 60)
                        for j in jobs]
                t1 = now()
                timed[way] = (t1[0] - t0[0], t1[1] - t0[1], [o.status for o in outs])
            if code is None or timed["alone"][2] != timed["batched"][2]:
                continue  # no batch, or different verdicts: compare like with like only
            alone += timed["alone"][0]
            batched += timed["batched"][0]
            cpu_alone += timed["alone"][1]
            cpu_batched += timed["batched"][1]
            runs += batch
    finally:
        impl.close()
    out: dict = {k: v / max(ran, 1) for k, v in sums.items() if k != "run"}
    out["cpu"] = {k: v / max(ran, 1) for k, v in cpu.items()}
    out["run"] = sums["run"] / max(n, 1)
    out["cases"], out["ran"] = cases, ran
    out["alone"], out["batched"], out["compared"] = alone / max(runs, 1), \
        batched / max(runs, 1), runs
    out["cpu alone"], out["cpu batched"] = cpu_alone / max(runs, 1), \
        cpu_batched / max(runs, 1)
    out["hunt generation"] = hunt_generation(profile, cases, batch, seed)
    return out


def print_breakdown(console, spec: str, got: dict, cores: int = 2) -> None:
    from rich.table import Table

    t = Table(title=f"where a case's time goes: {spec}, {got['ran']} of {got['cases']} "
                    f"generated cases ran (one at a time; load {os.getloadavg()[0]:.1f})")
    for col in ("stage", "CPU ms/case", "CPU share", "wall ms/case"):
        t.add_column(col, justify="right")
    total = sum(got["cpu"][k] for k in STAGES)
    for k in STAGES:
        t.add_row(k, f"{got['cpu'][k] * 1e3:.1f}", f"{got['cpu'][k] / total:.0%}",
                  f"{got[k] * 1e3:.1f}")
    t.add_row("sum", f"{total * 1e3:.1f}", "", f"{sum(got[k] for k in STAGES) * 1e3:.1f}")
    t.add_row("generation in the campaign's Hypothesis searches",
              f"{got['hunt generation'] * 1e3:.1f}", "", "")
    t.add_row("impl.run (whole, fresh)", "", "", f"{got['run'] * 1e3:.1f}")
    if got["compared"]:
        t.add_row(f"compiler + build + launch, alone ({got['compared']} cases)",
                  f"{got['cpu alone'] * 1e3:.1f}", "", f"{got['alone'] * 1e3:.1f}")
        t.add_row("the same, one program per batch", f"{got['cpu batched'] * 1e3:.1f}",
                  f"{got['cpu batched'] / max(got['cpu alone'], 1e-9):.0%}",
                  f"{got['batched'] * 1e3:.1f}")
    console.print(t)
    # what the CPU of a campaign's case allows on idle cores: its generation (Hypothesis'),
    # interpreter, and the batched compiler + build + launch
    per_case = got["hunt generation"] + got["cpu"]["interpreter"] + (
        got["cpu batched"] if got["compared"] else sum(
            got["cpu"][k] for k in ("compiler", "device build", "launch")))
    build = got["cpu"]["device build"]
    console.print(f"CPU s/case of a campaign's case (Hypothesis generation + interpreter + "
                  f"batched compiler, build and launch): {per_case:.3f} -> at most "
                  f"{cores / per_case:.1f} cases/s on {cores} idle cores; the device build "
                  f"alone ({build:.3f} CPU s/case) allows {cores / max(build, 1e-9):.1f}")


def main(argv=None) -> int:
    from rich.console import Console
    from rich.table import Table

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=60, help="valid corpus cases (spread evenly)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--device", default="pocl")
    p.add_argument("--stages", type=int, default=8, help="cases timed stage by stage")
    p.add_argument("--impl", help="only the stage breakdown of this implementation on "
                   "generated kernels (e.g. 'spirv:tinytc -d tgl {tl}')")
    p.add_argument("--profile", default="tinytc-0.4.0-tgl-new-bugs",
                   help="the generated kernels' profile (with --impl)")
    p.add_argument("--build-options", default="-cl-std=CL2.0 -cl-mad-enable")
    p.add_argument("--reject-status", type=int, default=1)
    p.add_argument("--campaign", type=int, metavar="CASES", help="with --impl: instead of "
                   "the stages, one campaign job's CPU per case over CASES cases")
    ns = p.parse_args(argv)
    if ns.impl and ns.campaign:
        got = campaign_cpu(ns.impl, ns.device, ns.profile, ns.campaign, ns.build_options,
                           ns.reject_status)
        print(f"one campaign job, {got['cases']} cases, {got['shrunk']} searches shrinking a "
              f"finding (load {os.getloadavg()[0]:.1f}): "
              f"{got['cpu']:.3f} CPU s/case -> at most {2 / got['cpu']:.1f} cases/s on 2 idle "
              f"cores; {1 / got['wall']:.2f} cases/s wall-clock here", flush=True)
        return 0
    if ns.impl:
        from rich.console import Console

        got = stage_breakdown(ns.impl, ns.device, ns.profile, ns.cases, ns.build_options,
                              ns.reject_status)
        print_breakdown(Console(width=max(100, Console().width)), ns.impl, got)
        return 0
    # no build served from a cache, pocl's or pyopencl's (the rows build the same sources);
    # set before any OpenCL start, inherited by the workers
    os.environ["POCL_KERNEL_CACHE"] = "0"
    os.environ["PYOPENCL_NO_CACHE"] = "1"

    from fuzz.conform.cli import run_all
    from fuzz.conform.corpus import default_corpus, load_corpus
    from tlinterp.impl import ImplOptions, Job, resolve

    valid = [c for c in load_corpus(default_corpus()) if c.kind == "valid"]
    step = max(1, len(valid) // max(1, ns.cases))
    cases = valid[::step][:ns.cases]
    options = ImplOptions(device=ns.device)
    console = Console(width=max(120, Console().width))
    rows = []
    with tempfile.TemporaryDirectory(prefix="tl-bench-external-") as tmp:
        specs = [("opencl", "opencl"),
                 ("opencl-c (cached)", store_lowerings(cases, tmp)),
                 ("opencl-c (tlrun)",
                  f"opencl-c:{sys.executable} -m tlinterp.cli {{tl}} --emit opencl")]
        for label, spec in specs:
            impl = resolve(spec, options)
            cpu0 = cpu_seconds()
            t0 = time.perf_counter()
            verdicts = run_all(impl, cases, ns.jobs, timeout=300)
            dt = time.perf_counter() - t0
            if hasattr(impl, "close"):
                impl.close()  # its workers are reaped: their CPU time is counted
            cpu = (cpu_seconds() - cpu0) / len(cases)
            passed = sum(v.status == "pass" for v in verdicts)
            rows.append((label, len(cases), passed, dt, len(cases) / dt, cpu))
        stages = None
        if ns.stages > 0:
            impl = resolve(specs[2][1], options)
            runner = getattr(impl, "runner", None)
            if runner is not None:  # this tree's foreign workers (absent before them)
                from tlgpu.lowering.function import kernel_name
                from tlgpu.runtime.foreign import ForeignJob

                t0 = time.perf_counter()
                runner.device_info()
                start_up = time.perf_counter() - t0
                compile_s, device_s = [], []
                for case in cases[:ns.stages]:
                    job = Job(case.source(), case.args(), func=case.func, groups=case.groups,
                              filename=case.kernel.name)
                    t0 = time.perf_counter()
                    code, _ = impl.compile_code(job, 300)
                    t1 = time.perf_counter()
                    import tlinterp

                    program = tlinterp.check(tlinterp.parse(job.source))
                    fn = program.function(case.func) if case.func else program.functions[0]
                    t2 = time.perf_counter()
                    runner.run(ForeignJob("opencl-c", code.decode(), fn, kernel_name(fn),
                                          None, "", dict(job.args), job.groups), 300)
                    compile_s.append(t1 - t0)
                    device_s.append(time.perf_counter() - t2)
                impl.close()
                n = len(compile_s)
                stages = (start_up, sum(compile_s) / n, sum(device_s) / n, n)
    base = rows[0][4]
    t = Table(title=f"external implementations on {ns.device}, {len(cases)} valid corpus "
                    f"cases, --jobs {ns.jobs}")
    for col in ("implementation", "cases", "passed", "seconds", "cases/s", "vs opencl",
                "CPU s/case", "cases/s on idle cores"):
        t.add_column(col, justify="right")
    for label, n, passed, dt, rate, cpu in rows:
        cores = 1 if label == "opencl" else ns.jobs  # the built-in runs one case at a time
        t.add_row(label, str(n), str(passed), f"{dt:.1f}", f"{rate:.2f}", f"{rate / base:.2f}x",
                  f"{cpu:.3f}", f"{cores / cpu:.2f}")
    console.print(t)
    if stages is not None:
        start_up, comp, dev, n = stages
        console.print(f"stages (one case at a time, {n} cases): worker start-up "
                      f"{start_up * 1e3:.0f} ms once; compiler (tlrun --emit opencl) "
                      f"{comp * 1e3:.0f} ms; build + launch in the worker {dev * 1e3:.0f} ms")
    console.print(f"opencl-c (cached): {rows[1][4]:.2f} cases/s, opencl-c (tlrun): "
                  f"{rows[2][4]:.2f} cases/s (target >= 4)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
