"""Programs kept across processes as exported StableHLO: a warm process neither traces nor lowers them.

JAX's persistent cache keeps a program's XLA executable, but finds it by the lowered program, so every
process traces and lowers first: regularized evolution's one-step ``ask`` in a Study spent 0.19 s tracing
and 0.32 s lowering before a 0.3 s read of its executable from the cache. ``stored_jit`` also keeps the
lowered program, as ``jax.export`` serializes it (a flatbuffer of StableHLO bytecode: data, read without
running code), in ``nasjax_exported/`` of the compilation cache folder. A warm process reads it (~2 ms),
calls it from a small ``jax.jit`` wrapper (a cheap trace and lowering), and XLA's cache serves the
executable.

Every process calls the deserialized program, the one that exported it too, so a cold and a warm process
run the same HLO and compute the same bits. A result that is one of the arguments as it came in (a searcher
whose ``ask`` leaves its state as it was) is not a result of the exported program: the call hands back the
argument itself. XLA would otherwise copy each such array into a new output buffer on every call
(evolution's one-step ``ask``: 7 of its 9 results, about 30 us of its ~190 us). The stored file says which
results those are (``MAGIC``, then a JSON line, then the serialized program).

JAX's lowering of a call to an exported program on a CPU first starts jaxlib's LAPACK kernels, which imports
SciPy: 0.1 s and 15 MB of a warm Study's first ``ask``. The JSON line also says whether the program calls a
LAPACK kernel (``uses_lapack``); one that does not is lowered without that start (in the lowering thread
only: another thread's programs start LAPACK as JAX does).

A stored program is found by a digest of what it was traced from: the caller's description of the function
(its name, the searcher's class, options and space shape), the argument tree and shapes, the JAX version,
platform and the settings that change tracing, and the source of the library's packages (an edited searcher
is traced again). Without ``flatbuffers`` (JAX's serialization needs it), without a cache folder, or when a
program cannot be exported or a stored file cannot be read, ``stored_jit`` is ``jax.jit`` as before.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Hashable

import jax
import jax.numpy as jnp
import jaxlib

STORE_DIR = "nasjax_exported"
MAGIC = b"nasjax-program-1\n"  # this line, a JSON line ({"forward": [...], "lapack": bool}), the program
PACKAGES = ("nas", "spaces", "policies", "surrogates")  # the library's source: part of every program's key
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
log = logging.getLogger(__name__)
_typeof = getattr(jax, "typeof", None) or jax.core.get_aval  # jax.typeof from JAX 0.6


@functools.cache
def source_digest() -> str:
    """SHA-256 of the library's Python source (``PACKAGES``, paths and contents, in order), once per process:
    a stored program traced from other code is not used (~1.6 MB read, a few ms)."""
    h = hashlib.sha256()
    for package in PACKAGES:
        for folder, subfolders, files in os.walk(os.path.join(_ROOT, package)):
            subfolders.sort()
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, _ROOT).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


@functools.cache
def serialization_available() -> bool:
    """Whether ``jax.export`` can serialize here (it needs the ``flatbuffers`` package)."""
    try:
        from jax._src.export import serialization  # noqa: F401 - raises ImportError without flatbuffers
    except ImportError:
        return False
    return True


def _settings() -> list:
    """What, besides the source and the arguments, changes what a trace gives."""
    c = jax.config
    device = jax.devices()[0]
    return [jax.__version__, jaxlib.__version__, device.platform,
            device.device_kind, c.jax_enable_x64, c.jax_threefry_partitionable, str(c.jax_default_matmul_precision),
            c.jax_numpy_dtype_promotion, c.jax_numpy_rank_promotion]  # fmt: skip


def _specs(leaves) -> list[jax.ShapeDtypeStruct]:
    out = []
    for leaf in leaves:
        aval = _typeof(leaf)
        out.append(jax.ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=getattr(aval, "weak_type", False)))
    return out


def program_key(ident: str, tree, specs) -> str:
    """The file name of a stored program: its name and a digest of what it is traced from (module docstring)."""
    shapes = [[list(s.shape), str(s.dtype), bool(s.weak_type)] for s in specs]
    text = json.dumps([ident, str(tree), shapes, _settings(), source_digest()], sort_keys=True, default=str)
    name = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in json.loads(ident).get("what", "program"))
    return f"{name[:40]}-{hashlib.sha256(text.encode()).hexdigest()[:40]}.jaxexport"


class StoredProgram:
    """``jax.jit(fn)`` whose lowered program comes from the store (module docstring); built at the first call."""

    def __init__(self, fn: Callable, ident: str, out_tree: Callable, compiler_options: dict | None, folder: str):
        self.fn, self.ident, self.out_tree, self.folder = fn, ident, out_tree, folder
        self.compiler_options = compiler_options
        self.loaded = None  # True: read from the store; False: exported here
        self._jit = None
        self._forward = None  # per result leaf: the argument leaf it is (>= 0), or -1: the program computes it
        self._lapack = True  # False: the program calls no LAPACK kernel (lowered without starting them)
        self._out_treedef = None
        self.__wrapped__ = fn

    def __call__(self, *args):
        if self._jit is None:
            self._jit = self._build(args)
        if self._lapack:
            out = self._jit(*args)
        else:  # lowered (at a first call) without starting LAPACK (module docstring)
            _lowering.lapack = False
            try:
                out = self._jit(*args)
            finally:
                _lowering.lapack = True
        if self._forward is None:  # a plain jit: its result as it is
            return out
        if type(out) is list:  # other shapes than the stored program's: fn's whole result, traced as it is
            return jax.tree.unflatten(self.out_tree(*args), out)
        leaves = jax.tree.leaves(args)
        computed = iter(out)
        flat = [next(computed) if i < 0 else _array(leaves[i]) for i in self._forward]
        return jax.tree.unflatten(self._out_treedef, flat)

    def _build(self, args) -> Callable:
        leaves, tree = jax.tree.flatten(args)
        specs = _specs(leaves)
        path = os.path.join(self.folder, program_key(self.ident, tree, specs))
        found = self._load(path, specs)
        if found is None:
            found = self._export(tree, specs, args)
            if found is None:
                return jax.jit(self.fn, compiler_options=self.compiler_options)
            exported, forward, lapack = found
            data = exported.serialize()
            _write(path, MAGIC + json.dumps({"forward": forward, "lapack": lapack}).encode() + b"\n" + bytes(data))
            found = jax.export.deserialize(data), forward, lapack  # what a warm process runs: the same bits
            self.loaded = False
        exported, self._forward, self._lapack = found
        self._out_treedef = self.out_tree(*args)
        fn = self.fn

        def run(*a):
            flat = jax.tree.leaves(a)
            if [(x.shape, x.dtype) for x in _specs(flat)] != [(s.shape, s.dtype) for s in exported.in_avals]:
                return list(jax.tree.leaves(fn(*a)))  # a list: the whole result (__call__)
            return tuple(exported.call(*flat))  # a tuple: the results that are not arguments

        run.__name__ = run.__qualname__ = json.loads(self.ident).get("what", "run")  # names its cache entries
        return jax.jit(run, compiler_options=self.compiler_options)

    def _load(self, path: str, specs):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        try:
            if not data.startswith(MAGIC):
                raise ValueError("not a stored program")
            header, _, body = data[len(MAGIC) :].partition(b"\n")
            header = json.loads(header)
            forward, lapack = [int(i) for i in header["forward"]], bool(header.get("lapack", True))
            exported = jax.export.deserialize(bytearray(body))
        except Exception as e:  # noqa: BLE001 - a damaged or foreign file: exported again, and replaced
            log.debug("stored program %s not read (%s): exported again", path, e)
            return None
        if [(s.shape, s.dtype) for s in exported.in_avals] != [(s.shape, s.dtype) for s in specs]:
            return None
        if forward.count(-1) != len(exported.out_avals) or not all(-1 <= i < len(specs) for i in forward):
            log.debug("stored program %s: its results do not match its header; exported again", path)
            return None
        self.loaded = True
        return exported, forward, lapack

    def _export(self, tree, specs, args):
        traced = {}

        def flat(*leaves):
            out = self.fn(*jax.tree.unflatten(tree, leaves))
            traced["tree"] = jax.tree.structure(out)
            return jax.tree.leaves(out)

        try:
            closed = jax.make_jaxpr(flat)(*specs)
            forward = forwarded_results(closed.jaxpr)

            def computed(*leaves):  # the traced program again, without the results that are its arguments
                out = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *leaves)
                return [x for x, i in zip(out, forward) if i < 0]

            exported = jax.export.export(jax.jit(computed))(*specs)
        except Exception as e:  # noqa: BLE001 - a program export refuses (an effect, a custom call): jit it
            log.debug("program %s not exported (%s): compiled as it is", self.ident, e)
            return None
        expected = self.out_tree(*args)
        if traced["tree"] != expected:
            raise ValueError(f"{self.ident}: out_tree gives {expected}, the program returns {traced['tree']}")
        return exported, forward, uses_lapack(exported)


def uses_lapack(exported) -> bool:
    """Whether an exported program may call jaxlib's LAPACK kernels (its text names one: ``lapack_...``)."""
    return "lapack" in exported.mlir_module()


_lowering = threading.local()  # .lapack False: this thread lowers a stored program that calls no LAPACK kernel


def _skip_lapack_start_where_unused() -> None:
    """Wraps JAX's start of the LAPACK kernels for exported calls (once) so a thread lowering a program without
    LAPACK skips it; a JAX without that function is left as it is."""
    try:
        from jax._src.export import _export  # JAX has no public hook for it

        start = _export._ensure_backends_initialized
    except (ImportError, AttributeError):
        return
    if getattr(start, "nasjax_wrapped", False):
        return

    def start_unless_unused(platforms):
        if getattr(_lowering, "lapack", True):
            start(platforms)

    start_unless_unused.nasjax_wrapped = True
    _export._ensure_backends_initialized = start_unless_unused


_skip_lapack_start_where_unused()


def forwarded_results(jaxpr) -> list[int]:
    """Per result of ``jaxpr``: the index of the argument it is, unchanged, or -1 (computed)."""
    position = {id(v): i for i, v in enumerate(jaxpr.invars)}
    return [position.get(id(v), -1) for v in jaxpr.outvars]


def _array(x):
    """A forwarded argument as the program would return it: a JAX array (a host value is put on the device)."""
    return x if isinstance(x, jax.Array) else jnp.asarray(x)


def _write(path: str, data: bytes) -> None:
    """Atomically (a temporary file, then a rename); a folder that cannot be written keeps nothing."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        log.debug("program not stored in %s: %s", path, e)
        try:
            os.remove(tmp)
        except OSError:
            pass


def store_folder() -> str:
    """``nasjax_exported/`` in the compilation cache folder in use ('' when the cache is off)."""
    from nas.engine.devices import default_compilation_cache

    cache = default_compilation_cache()
    return os.path.join(cache, STORE_DIR) if cache else ""


def stored_jit(fn: Callable, ident: str | None, out_tree: Callable, compiler_options: dict | None = None):
    """``jax.jit(fn, compiler_options=compiler_options)``, its lowered program kept in the store.

    ``ident``: a JSON object describing what ``fn`` computes, the same in every process that traces the same
    program (``"what"``: its name; None: not stored, a plain jit). ``out_tree(*args)``: the tree of ``fn``'s
    result, from its arguments (a stored program is not traced, so its result's tree is not seen)."""
    if ident is None or not serialization_available():
        return jax.jit(fn, compiler_options=compiler_options)
    folder = store_folder()
    if not folder:
        return jax.jit(fn, compiler_options=compiler_options)
    return StoredProgram(fn, ident, out_tree, compiler_options, folder)


def describe(what: str, searcher, space_key: Hashable | None) -> str | None:
    """``ident`` for a searcher's program ``what``: its class, what it computes (``Searcher.identity``), its
    static variant and the shape of its space (``space_key``; None: a space without one is not stored, nor a
    searcher whose ``stored_programs`` says no, ``nas.core.contract``)."""
    stored = getattr(searcher, "stored_programs", None)
    if stored is None:  # by its profile: light steps (gathers, compares), whose tracing is much of a warm start
        stored = getattr(searcher, "compile_profile", "default") != "default"
    if space_key is None or not stored:
        return None
    cls = type(searcher)
    try:
        return json.dumps({"what": what, "class": f"{cls.__module__}.{cls.__qualname__}",
                           "identity": searcher.identity, "variant": repr(searcher.variant),
                           "space": repr(space_key)}, sort_keys=True)  # fmt: skip
    except (TypeError, ValueError):  # options that are not JSON: traced every time
        return None


__all__ = ["MAGIC", "STORE_DIR", "StoredProgram", "describe", "forwarded_results", "program_key", "source_digest",
           "stored_jit"]  # fmt: skip
