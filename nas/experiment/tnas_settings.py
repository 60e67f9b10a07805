"""Reading a TNAS config (``configs/<suite>_tnas.py``): shared by ``scripts.meta_train`` and ``bench_tnas``
(a module without absl flags, so both scripts can import it)."""

from __future__ import annotations

from nas.experiment import cli

PARAMS_NAME = "tnas_params.npz"


def settings(config):
    """(target, suite, ReptileConfig, DeepKernelConfig, meta dict) from the config; ConfigError when malformed."""
    from surrogates.deep_kernel import DeepKernelConfig
    from surrogates.meta_training import FAILED_SCORES
    from surrogates.reptile import ReptileConfig

    cfg = config.to_dict()
    for field in ("benchmark", "suite", "meta", "model"):
        if field not in cfg:
            raise cli.ConfigError(f"config lacks field {field!r}; see configs/nb201_tnas.py")
    meta = dict(cfg["meta"])
    suite = [s.strip() for s in str(cfg["suite"]).split(",") if s.strip()]
    try:
        rep = ReptileConfig(**{k: meta[k] for k in ReptileConfig.__dataclass_fields__ if k in meta})
        model = DeepKernelConfig(**cfg["model"])
    except (TypeError, ValueError) as e:
        raise cli.ConfigError(f"config.meta / config.model: {e}") from e
    for k in ("outer_steps", "chunk_steps", "seed", "init_design"):
        if not isinstance(meta.get(k), int) or meta[k] < (0 if k in ("outer_steps", "seed") else 1):
            raise cli.ConfigError(f"config.meta.{k} must be a non-negative integer (chunk_steps, init_design >= 1)")
    meta.setdefault("num_strings", 20_000)  # strings sampled for meta-training from a space of > 100,000
    meta.setdefault("failed_scores", "error")  # "worst": a diverged real training takes its task's worst score
    if not isinstance(meta["num_strings"], int) or meta["num_strings"] < 2:
        raise cli.ConfigError("config.meta.num_strings must be an integer >= 2")
    if meta["failed_scores"] not in FAILED_SCORES:
        got = meta["failed_scores"]
        raise cli.ConfigError(f"config.meta.failed_scores must be one of {list(FAILED_SCORES)}, got {got!r}")
    return cfg["benchmark"], suite, rep, model, meta
