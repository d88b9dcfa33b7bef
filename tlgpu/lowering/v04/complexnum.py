"""c32 and c64 in OpenCL C: `float2` / `double2` (re in .x, im in .y), with the interpreter's
formulas (tlinterp/interp/scalar_v04.py, docs/semantics.md "v0.4 types and rounding").

add, sub and neg are the vector operations (each part rounded once); mul is
(ac - bd) + (ad + bc)i with each product and sum rounded in the type (FP_CONTRACT OFF); div is
Smith's algorithm with NumPy's branches; abs is NumPy's: max * sqrt(fma(r, r, 1)) with
r = min / max of the parts' magnitudes, in f64 (for c32 then rounded to f32); exp follows
glibc's cexp (sincos of the imaginary part, the real part's exp scaled where it would
overflow), which the interpreter reaches through NumPy; exp2 z is exp(z * ln 2).
"""

from __future__ import annotations

from tlinterp.lang.types import ScalarType

COMPLEX = (ScalarType.c32, ScalarType.c64)
PART = {ScalarType.c32: ScalarType.f32, ScalarType.c64: ScalarType.f64}
_SUFFIX = {ScalarType.c32: "f", ScalarType.c64: "d"}
_VEC = {ScalarType.c32: "float2", ScalarType.c64: "double2"}
_REAL = {ScalarType.c32: "float", ScalarType.c64: "double"}


def _per_type(name: str, body: str, deps=()) -> dict[str, tuple[str, tuple[str, ...]]]:
    """One helper per complex type; `body` uses {V} {R} {s} (vector, real type, suffix) and
    {one}, {tiny} (1 and the least normal in the real type), {t} (exp's overflow step)."""
    out = {}
    for c in COMPLEX:
        s, R = _SUFFIX[c], _REAL[c]
        fmt = dict(V=_VEC[c], R=R, s=s, one="1.0f" if s == "f" else "1.0",
                   tiny="FLT_MIN" if s == "f" else "DBL_MIN",
                   t="88.0f" if s == "f" else "709.0",
                   ln2="0x1.62e43p-1f" if s == "f" else "0x1.62e42fefa39efp-1")
        out[f"{name}_{s}"] = (body.format(**fmt), tuple(f"{d}_{s}" for d in deps))
    return out


HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    # a complex value from its parts: through a private array, since Oclgrind takes a vector
    # built as ({V})(x, y) from computed parts for uninitialised memory (its shadow of the
    # insertelement chain's undef base), a false report on every store of one
    **_per_type("tl_cplx", """\
static {V} tl_cplx_{s}({R} x, {R} y) {{ {R} r[2]; r[0] = x; r[1] = y; return vload2(0, r); }}
"""),
    **_per_type("tl_cmul", """\
static {V} tl_cmul_{s}({V} a, {V} b) {{
    return tl_cplx_{s}(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}}
""", ("tl_cplx",)),
    **_per_type("tl_cdiv", """\
/* Smith's algorithm, NumPy's branches */
static {V} tl_cdiv_{s}({V} a, {V} b) {{
    {R} ar = fabs(b.x), ai = fabs(b.y);
    if (ar >= ai) {{
        if (ar == 0 && ai == 0) return tl_cplx_{s}(a.x / ar, a.y / ar);
        {R} rat = b.y / b.x, scl = {one} / (b.x + b.y * rat);
        return tl_cplx_{s}((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
    }}
    {R} rat = b.x / b.y, scl = {one} / (b.y + b.x * rat);
    return tl_cplx_{s}((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}}
""", ("tl_cplx",)),
    "tl_cabs_d": ("""\
/* NumPy's complex abs: no spurious overflow or underflow */
static double tl_cabs_d(double2 z) {
    double x = fabs(z.x), y = fabs(z.y);
    if (isinf(x) || isinf(y)) return INFINITY;
    if (isnan(x) || isnan(y)) return x + y;
    double l = fmax(x, y), s = fmin(x, y);
    if (s == 0.0) return l;
    double r = s / l;
    return l * sqrt(fma(r, r, 1.0));
}
""", ()),
    "tl_cabs_f": ("""\
static float tl_cabs_f(float2 z) { return (float)tl_cabs_d(convert_double2(z)); }
""", ("tl_cabs_d",)),
    **_per_type("tl_cexp", """\
static {V} tl_cexp_{s}({V} z) {{
    {R} x = z.x, y = z.y, c, sn;
    if (!isfinite(x) || !isfinite(y)) {{
        {R} e = exp(x);
        if (y == 0) return tl_cplx_{s}(e, y);
        return tl_cplx_{s}(e * cos(y), e * sin(y));
    }}
    if (fabs(y) > {tiny}) {{ sn = sincos(y, &c); }} else {{ sn = y; c = {one}; }}
    if (x > {t}) {{ {R} et = exp({t}); x -= {t}; sn *= et; c *= et; }}
    {R} e = exp(x);
    return tl_cplx_{s}(e * c, e * sn);
}}
""", ("tl_cplx",)),
    **_per_type("tl_cexp2", """\
static {V} tl_cexp2_{s}({V} z) {{ return tl_cexp_{s}(tl_cmul_{s}(z, ({V})({ln2}, 0))); }}
""", ("tl_cexp", "tl_cmul")),
}


def call(name: str, t: ScalarType, *args: str) -> str:
    return f"{name}_{_SUFFIX[t]}({', '.join(args)})"


def vector(t: ScalarType) -> str:
    return _VEC[t]


def binary(op: str):
    if op in ("add", "sub"):
        c = "+" if op == "add" else "-"
        return lambda a, b, t: f"({a} {c} {b})"
    return lambda a, b, t: call(f"tl_c{op}", t, a, b)


UNARY = {
    "neg": lambda a, t: f"(-{a})",
    "conj": lambda a, t: call("tl_cplx", t, f"({a}).x", f"-({a}).y"),
    "re": lambda a, t: f"({a}).x",
    "im": lambda a, t: f"({a}).y",
    "abs": lambda a, t: call("tl_cabs", t, a),
    **{f: (lambda base: lambda a, t: call(f"tl_c{base}", t, a))(f.removeprefix("native_"))
       for f in ("exp", "exp2", "native_exp", "native_exp2")},
}


def is_zero(a: str) -> str:
    """Whether both parts are zero (either sign), as `equal a, 0` says, in one comparison:
    Oclgrind crashes on the code clang makes of two part comparisons of a vector argument
    guarding a load (a collective's run-time beta)."""
    return f"(fabs(({a}).x) + fabs(({a}).y) == 0)"


def compare(cond: str, a: str, b: str) -> str:
    eq = f"(({a}).x == ({b}).x && ({a}).y == ({b}).y)"
    return eq if cond == "eq" else f"(!{eq})"


def result_type(op: str, t: ScalarType) -> ScalarType:
    """abs, re and im of a complex value have the part's type; the rest the operand's."""
    return PART[t] if op in ("abs", "re", "im") else t


def cast(a: str, src: ScalarType, dst: ScalarType, real_cast) -> str:
    """`cast a : dst` with dst complex: complex -> complex converts each part (rounding to
    nearest even); a real value becomes the real part (converted as `cast` to the part's type
    would), the imaginary part +0."""
    if src is dst:
        return a
    if src in COMPLEX:
        return f"convert_{_VEC[dst]}({a})"
    part = PART[dst]
    zero = "0.0f" if part is ScalarType.f32 else "0.0"
    return call("tl_cplx", dst, real_cast(a, src, part), zero)
