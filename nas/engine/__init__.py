"""The compiled run machinery: one search run is one array program.

- ``runner``: ``make_search(searcher) -> run(key, objective) -> History``, ``lax.scan`` over
  ask/query/tell steps; ``jax.jit(jax.vmap(run))`` runs many seeds.
- ``incumbent``: the incumbent after each query (in JAX and in numpy).
- ``chunked_loop``: the same program in compiled chunks with progress, checkpoints and exact resume;
  ``run_kinds``: what differs between a single- and a multi-fidelity run (chosen once per run).
- ``program_cache``: the process's compiled programs, compiled ahead, several at a time in threads.
- ``compile_policy``: the XLA options of a searcher's programs (its ``compile_profile``) and the CPU
  lowering of JAX's random bits, installed before the first searcher program is traced.
- ``checkpoint``: the run state as one atomic ``.npz`` with the run's fingerprint.
- ``devices``: seeds split over devices and processes; the persistent compilation cache.
- ``compiler_memory``: returns the compiler's freed heap to the OS between compiles.
"""
