"""OpenCL device choice (`--device pocl|nvidia|oclgrind|intel|PLATFORM:DEVICE|NAME@VERSION`,
PYOPENCL_CTX) and the context/queue cache.

When several devices match a name (Debian's pocl beside the one the pyopencl[pocl] wheel
brings, say), the choice never depends on the order the OpenCL loader lists platforms in,
which differs between processes: `rank` orders the matches by the rule in docs/devices.md
(a device that can build first, tlgpu.runtime.probe; then the wheel's pocl, then the newest
driver version, then names), and the first that builds wins.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from tlgpu.runtime.probe import Probe
from tlinterp.lang.diagnostics import BackendError

# (platform, device) -> whether it builds; tlgpu.runtime.probe's in real use, fakes in tests
Prober = Callable[[object, object], Probe]


def _is_intel_cpu(platform, device) -> bool:
    # Intel's CPU runtime, not its GPU runtime or FPGA emulator; matched on the platform,
    # since pocl's device name on an Intel machine holds "Intel" too
    import pyopencl as cl

    return (platform.name.lower().startswith("intel")
            and bool(device.type & cl.device_type.CPU))


def _named(*words: str):
    return lambda platform_name: any(w in platform_name.lower() for w in words)


_ALIASES_BY_NAME = {"pocl": _named("portable computing language", "pocl"),
                    "nvidia": _named("nvidia"), "oclgrind": _named("oclgrind")}


def _on_platform(named):
    return lambda platform, device: named(platform.name)


_ALIASES = {**{a: _on_platform(f) for a, f in _ALIASES_BY_NAME.items()},
            "intel": _is_intel_cpu}
ALIASES = tuple(_ALIASES)  # the short names --device takes


@dataclass
class DeviceHandle:
    device: object  # pyopencl.Device
    context: object
    queue: object  # a profiling-enabled in-order queue

    @property
    def key(self) -> str:
        d = self.device
        return f"{d.platform.name}|{d.name}|{d.driver_version}"

    @property
    def keeps_f32_denormals(self) -> bool:
        import pyopencl as cl

        return bool(self.device.single_fp_config & cl.device_fp_config.DENORM)


_CACHE: dict[str, DeviceHandle] = {}


def _cl():
    try:
        import pyopencl as cl
    except ImportError as e:  # pragma: no cover - pyopencl is a dependency
        raise BackendError(f"pyopencl is not installed ({e})") from None
    return cl


OFF = "TLGPU_NO_OPENCL"  # set (to a reason): no platform query; the test suite's marker check


def _all_devices():
    if os.environ.get(OFF):
        raise BackendError(f"OpenCL is off in this process ({OFF}={os.environ[OFF]})")
    cl = _cl()
    from tlgpu.runtime.icd import register

    register()  # before the process's first platform query, when the loader reads its ICDs
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        raise BackendError(f"no OpenCL platform found ({e}); install pyopencl[pocl] for a "
                           "CPU device") from None
    out = []
    from tlgpu.runtime.oclgrind import without_query_noise

    for p in platforms:
        try:
            with without_query_noise("oclgrind" in p.name.lower()):
                out += [(p, d) for d in p.get_devices()]
        except cl.Error:
            continue
    return out


def _describe(devs) -> str:
    return "; ".join(label(d) for _, d in devs) or "none"


def label(device) -> str:
    """How every tool names the device it chose: 'PLATFORM DRIVER-VERSION: DEVICE'."""
    p = device.platform
    return f"{p.name.strip()} {device.driver_version.strip()}: {device.name.strip()}"


def version_key(text: str) -> tuple[int, ...]:
    """The first dotted number of a driver version ('3.1+debian' -> (3, 1), 'Oclgrind 21.10'
    -> (21, 10)); () if none."""
    m = re.search(r"\d+(?:\.\d+)*", text)
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def _wheel_pocl_version() -> Optional[tuple[int, ...]]:
    """The release of pocl that pyopencl's wheel brings (the pocl-binary-distribution
    distribution, the `pocl` extra of pyopencl), or None when it is not installed."""
    try:
        return version_key(importlib.metadata.version("pocl-binary-distribution")) or None
    except importlib.metadata.PackageNotFoundError:
        return None


def from_wheel(platform_name: str, driver_version: str,
               wheel: Optional[tuple[int, ...]]) -> bool:
    """Whether a platform is the pocl of pyopencl's wheel: a pocl of the wheel's release (the
    OpenCL API tells no library path; a system pocl of the very same release ranks equal, and
    the names decide)."""
    return (wheel is not None and _ALIASES_BY_NAME["pocl"](platform_name)
            and version_key(driver_version)[:len(wheel)] == wheel)


def rank(devs: list, wheel: Optional[tuple[int, ...]] = None,
         probe: Optional[Prober] = None) -> list:
    """`devs` ((platform, device) pairs, pyopencl's or any objects with the same `name`,
    `driver_version` attributes) in the order of preference, the same in every process:
    with `probe`, every device that builds before any that cannot; then the pyopencl wheel's
    pocl, then the highest driver version, then platform and device names."""
    def key(pd):
        p, d = pd
        v = version_key(d.driver_version)
        return (probe is not None and not probe(p, d).builds,
                not from_wheel(p.name, d.driver_version, wheel), not v, tuple(-x for x in v),
                p.name.strip(), d.name.strip(), d.driver_version.strip())
    return sorted(devs, key=key)


def real_probe(platform, device) -> Probe:
    """This machine's answer (a child process's build, cached; tlgpu.runtime.probe)."""
    from tlgpu.runtime.probe import probe

    return probe(platform.name, device.name, device.driver_version)


def _matches(spec: str, devs: list) -> list:
    """The (platform, device) pairs that a device string names, in no particular order."""
    low = spec.lower()
    name, at, version = low.rpartition("@") if "@" in low else (low, "", "")
    if at:  # NAME@VERSION: among what NAME matches, the driver versions starting VERSION
        return [(p, d) for p, d in _matches(name, devs)
                if d.driver_version.strip().lower().startswith(version)]
    if low in _ALIASES:
        return [(p, d) for p, d in devs if _ALIASES[low](p, d)]
    if ":" in low:
        plat, _, dev = low.partition(":")
        return [(p, d) for p, d in devs if plat in p.name.lower() and dev in d.name.lower()]
    return [(p, d) for p, d in devs if low in p.name.lower() or low in d.name.lower()]


def find_device(spec: Optional[str] = None):
    """The pyopencl device a device string names (see module doc); BackendError if none, or
    if none of those it names can build a kernel here."""
    devs = _all_devices()
    if not devs:
        raise BackendError("no OpenCL device found; install pyopencl[pocl] for a CPU device")
    if spec is None and os.environ.get("PYOPENCL_CTX"):
        cl = _cl()
        try:
            ctx = cl.create_some_context(interactive=False)
        except (cl.Error, RuntimeError, ValueError) as e:
            raise BackendError(f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']!r} selects no "
                               f"device ({e}); available: {_describe(devs)}") from None
        d = ctx.devices[0]
        if not real_probe(d.platform, d).builds:
            raise BackendError(cannot_build([(d.platform, d)], devs, "PYOPENCL_CTX",
                                            real_probe, _wheel_pocl_version()))
        return d
    spec = spec or "pocl"
    found, skipped = choose(spec, devs, _wheel_pocl_version(), real_probe)
    if skipped:
        say_once(fallback_note(spec, skipped, found, real_probe))
    return found


def choose(spec: str, devs: list, wheel: Optional[tuple[int, ...]],
           probe: Prober) -> tuple[object, list]:
    """The device `spec` picks among `devs` ((platform, device) pairs) and the better-ranked
    matches passed over because they cannot build (probed in rank order, each only when
    needed); BackendError when none matches or none of the matches builds."""
    ranked = rank(_matches(spec, devs), wheel)
    if not ranked:
        if spec.lower() == "intel":
            raise BackendError(_no_intel(devs))
        raise BackendError(f"no OpenCL device matches '{spec}'; available: {_describe(devs)}")
    for i, (p, d) in enumerate(ranked):
        if probe(p, d).builds:
            return d, ranked[:i]
    raise BackendError(cannot_build(ranked, devs, spec, probe, wheel))


def _short(spec: str, device) -> str:
    """A passed-over device as the fallback line names it: 'pocl 3.0-rc2' for an alias."""
    return (f"{spec} {device.driver_version.strip()}" if spec.lower() in _ALIASES
            else label(device))


def fallback_note(spec: str, skipped: list, chosen, probe: Prober) -> str:
    """The one line saying that `spec`'s first choice cannot build and which device is used."""
    why = "; ".join(f"{_short(spec, d)} cannot build here ({probe(p, d).reason})"
                    for p, d in skipped)
    return f"{why}; using {label(chosen)}"


def cannot_build(tried: list, devs: list, spec: str, probe: Prober,
                 wheel: Optional[tuple[int, ...]]) -> str:
    """Why `spec` picks nothing (every device in `tried` fails to build) and what to do: for
    pocl, Debian's package; and the other devices installed here that do build."""
    lines = [f"no device that '{spec}' names can build a kernel here:"]
    lines += [f"  {label(d)}: cannot build here: {probe(p, d).reason}" for p, d in tried]
    if spec.lower() == "pocl":
        lines.append("  on Debian/Ubuntu, install a pocl that builds on this CPU: "
                     "apt install pocl-opencl-icd (then --device pocl picks it)")
    others = [r for r in inventory(devs, wheel, kind=lambda d: "", probe=probe)
              if not r.cannot_build and all(r.device != d.name.strip() or
                                            r.platform != p.name.strip() for p, d in tried)]
    for r in others:
        lines.append(f"  or --device {r.select} ({r.platform} {r.version}: {r.device})")
    if not _matches("intel", devs):
        from tlgpu.runtime.icd import INSTALL

        lines.append(f"  or --device intel, Intel's CPU runtime: {INSTALL}")
    return "\n".join(lines)


_SAID = "TLGPU_DEVICE_NOTES_SAID"  # notes already said, inherited by child processes


def notes_said() -> list[str]:
    """The notes say_once has said in this process and the processes that started it."""
    return [n for n in os.environ.get(_SAID, "").split("\n") if n]


def say_once(note: str) -> None:
    """Say `note` on stderr, once for this process and every process it starts afterwards
    (fuzzing workers, isolated launches: they repeat the choice, not the line)."""
    said = notes_said()
    if note in said:
        return
    os.environ[_SAID] = "\n".join([*said, note])
    print(f"{_program()}: {note}", file=sys.stderr)


def _program() -> str:
    """The tool's name (tlrun, tlfuzz, ...), also when run as `python -m MODULE`."""
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    if main is not None:
        module = main.name.removesuffix(".__main__")  # python -m PACKAGE
        for ep in importlib.metadata.entry_points(group="console_scripts"):
            if ep.value.partition(":")[0] == module:
                return ep.name
    base = os.path.basename(sys.argv[0] if sys.argv else "")
    return base if base and not base.endswith(".py") and base[0] != "-" else "tlgpu"


def _no_intel(devs) -> str:
    from tlgpu.runtime.icd import INSTALL, register

    reg = register()
    if reg.library is None:
        return ("no Intel CPU OpenCL device: Intel's runtime (the 'intel' extra) is not "
                f"installed; install it with {INSTALL}")
    if reg.problem:
        return f"no Intel CPU OpenCL device: {reg.library} is installed but {reg.problem}"
    # e.g. a dependency missing, or pyopencl asked for platforms before tlgpu registered it
    return (f"no Intel CPU OpenCL device: {reg.library} is installed but its platform did not "
            f"load (OCL_ICD_DEBUG=7 shows the loader's reasons); available: {_describe(devs)}")


def handle(spec: Optional[str] = None) -> DeviceHandle:
    """One context and queue per device, however it was named."""
    cl = _cl()
    dev = find_device(spec)
    cache_key = f"{dev.platform.name}|{dev.name}|{dev.int_ptr}"
    if cache_key not in _CACHE:
        from tlgpu.runtime.oclgrind import enable_checks, is_oclgrind, without_query_noise

        if is_oclgrind(dev):
            enable_checks()  # read by Oclgrind when the context is created
        with without_query_noise(is_oclgrind(dev)):
            ctx = cl.Context([dev])
            queue = cl.CommandQueue(ctx,
                                    properties=cl.command_queue_properties.PROFILING_ENABLE)
        _CACHE[cache_key] = DeviceHandle(dev, ctx, queue)
    return _CACHE[cache_key]


@dataclass(frozen=True)
class Listed:
    """One row of `tlrun --list-devices`."""
    platform: str
    version: str  # the driver version
    device: str
    kind: str  # CPU, GPU, ...
    select: str  # a --device string that picks exactly this device
    default_for: tuple[str, ...]  # the aliases (pocl, nvidia, ...) that pick it
    cannot_build: str = ""  # why it cannot build a kernel here; "" when it can
    subgroups: str = ""  # how v0.4's sub-group operations and coopmatrices run (SUBGROUP_WAYS)


# LoweringConfig.subgroups (tlgpu/lowering/v04/subgroups.py) in words, for the device table
SUBGROUP_WAYS = {"intel": "device sub-groups", "nvidia": "warp shuffles (PTX)",
                 "local": "local memory (1 sub-group per work-group)"}


def subgroup_strategy(device, asked: Optional[str] = None) -> str:
    """How this device runs sub-group operations (LoweringConfig.subgroups): NVIDIA's warp
    shuffles, the Intel sub-groups (a fixed sub-group size needs cl_intel_required_subgroup_size
    or cl_intel_subgroups), else local memory. A strategy asked for that the device lacks
    becomes the device's; "local" runs anywhere."""
    ext = (getattr(device, "extensions", "") or "").split()
    if "nvidia" in device.platform.name.lower():
        have = "nvidia"
    elif "cl_intel_required_subgroup_size" in ext or "cl_intel_subgroups" in ext:
        have = "intel"
    else:
        have = "local"
    return asked if asked in (have, "local") else have


def _kind(device) -> str:
    import pyopencl as cl

    return " ".join(n for n in ("CPU", "GPU", "ACCELERATOR")
                    if device.type & getattr(cl.device_type, n)) or "other"


def inventory(devs: Optional[list] = None, wheel: Optional[tuple[int, ...]] = None,
              kind=None, probe: Optional[Prober] = None) -> list[Listed]:
    """Every device the loader shows, with the string that selects it and the aliases whose
    choice it is; `devs`/`wheel`/`kind`/`probe` default to this machine's (fakes in tests;
    fake devices without a `probe` all build)."""
    if devs is None:
        try:
            devs = _all_devices()
        except BackendError:  # no platform at all: an empty table, not an error
            devs = []
        wheel = _wheel_pocl_version()
        probe = probe or real_probe
    probe = probe or (lambda p, d: Probe(True))
    kind = kind or _kind
    chosen = {a: [pd for pd in rank(_matches(a, devs), wheel, probe)[:1]
                  if probe(*pd).builds] for a in ALIASES}
    rows = []
    for p, d in rank(devs, wheel, probe):
        ver = d.driver_version.strip()
        full = f"{p.name.strip()}:{d.name.strip()}"
        aliases = tuple(a for a, c in chosen.items() if c and c[0][1] is d)
        mine = [a for a in ALIASES if (p, d) in _matches(a, devs)]
        for spec in (*aliases, *(f"{a}@{ver}" for a in mine), full, f"{full}@{ver}"):
            if rank(_matches(spec, devs), wheel, probe)[0][1] is d:
                break
        else:
            spec = f"{full}@{ver}"  # twins: the same names and version; either is this one
        verdict = probe(p, d)
        rows.append(Listed(p.name.strip(), ver, d.name.strip(), kind(d), spec, aliases,
                           "" if verdict.builds else verdict.reason or "no reason given",
                           SUBGROUP_WAYS[subgroup_strategy(d)]))
    return rows


def probe_child(platform_name: str, device_name: str, driver_version: str) -> dict:
    """The probe's child (tlgpu.runtime.probe): find the device among this process's
    platforms and build the one-line kernel; the answer as JSON-ready data."""
    import pyopencl as cl

    from tlgpu.runtime import probe

    want = probe.key(platform_name, device_name, driver_version)
    try:
        devs = [d for p, d in _all_devices()
                if probe.key(p.name, d.name, d.driver_version) == want]
    except BackendError as e:
        return {"builds": False, "keep": False,
                "reason": "; ".join(d.message for d in e.diagnostics)}
    if not devs:  # the loader of this process lists it no more: nothing to remember
        return {"builds": False, "reason": "the device is no longer listed", "keep": False}
    try:
        ctx = cl.Context([devs[0]])
        cl.Program(ctx, probe.KERNEL).build()
    except cl.Error as e:
        return {"builds": False,
                "reason": probe.first_line(probe.build_log_of(str(e))) or str(e)}
    return {"builds": True}


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python -m tlgpu.runtime.devices PLATFORM DEVICE DRIVER-VERSION")
    import json

    print(json.dumps(probe_child(*sys.argv[1:])))
