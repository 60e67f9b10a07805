"""Tuners on live trainings: our multi-fidelity searchers through the host Study and through the Ray Tune adapter,
beside Optuna's HyperbandPruner + TPE and Ray Tune's ASHAScheduler + random search, on the same task, space,
budget and workers (the tasks: ``scripts/experiments/tuner_tasks.py``).

    nice -n 10 python -m scripts.experiments.tuner_comparison --workdir=/tmp/tuner_cmp
    nice -n 10 python -m scripts.experiments.tuner_comparison --workdir=/tmp/tuner_cmp --setting=ray
    python -m scripts.figures.tuner_comparison_figures --workdir=/tmp/tuner_cmp     # table, figure

Settings:

- ``local``: W = 4 worker processes on this machine. ``asha``, ``hyperband``, ``bohb``, ``mf_bananas``:
  ``Study(space, searcher, fidelities=..., workers=4)`` and ``study.optimize(objective, n_workers=4)`` (process
  workers; a promotion continues its parent's checkpoint). ``optuna_hyperband_tpe``: an Optuna study with
  ``TPESampler`` and ``HyperbandPruner(min_resource, max_resource, reduction_factor=3)``, ``n_jobs=4`` threads,
  the training reporting at every budget of the ladder. ``ray_asha_random``: a Tune ``Tuner`` with
  ``ASHAScheduler(grace_period, max_t, reduction_factor=3)`` and random search, 4 trials at once.
- ``ray``: a local Ray instance with W = 2 CPUs (2 trials at once): ``ray_adapter_<searcher>`` runs the searcher
  through ``nas.adapters.ray_multi_fidelity`` (a paused trial resumes its checkpoint on promotion), beside
  ``ray_asha_random`` with 2 trials at once.

Every method gets the same compute budget, ``max_queries`` full trainings' worth of the budget unit; the peers
stop at the first segment boundary after it. Each run is a fresh process (its wall time starts once the
tool is set up: the Ray instance is started before the clock); its CPU time is that of its process tree
(``TreeCPU``: Ray's workers included). A repetition runs every method in turn (the order rotates with the
repetition, so a change of the machine's load hits every method alike); seed = repetition. The first run of a
method may compile programs into the persistent cache: ``--warmup`` runs each method once untimed first.
An interrupted comparison resumes: finished runs (``runs/<setting>_<task>_<method>_<rep>.json``, written
atomically) are skipped.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from absl import app, flags

from nas.experiment import cli
from scripts.experiments import tuner_tasks as tt

OURS = ("asha", "hyperband", "bohb", "mf_bananas")
SETTINGS = {
    "local": {"workers": 4, "methods": (*OURS, "optuna_hyperband_tpe", "ray_asha_random")},
    "ray": {"workers": 2, "methods": (*(f"ray_adapter_{s}" for s in OURS), "ray_asha_random")},
}
MAX_QUERIES = {"naval": 20, "digits": 4}  # the budget in full trainings: 162,000 iterations, 36 epochs

_WORKDIR = flags.DEFINE_string("workdir", None, "Where runs/*.json go.", required=True)
_SETTING = flags.DEFINE_enum("setting", "local", list(SETTINGS), "Workers on this machine, or a local Ray.")
_TASKS = flags.DEFINE_list("tasks", ["naval", "digits"], "Tasks (tuner_tasks.TASKS).")
_METHODS = flags.DEFINE_list("methods", [], "Methods of the setting (default: all).")
_REPS = flags.DEFINE_list("reps", ["10", "10"], "Repetitions per task, in the order of --tasks.")
_WARMUP = flags.DEFINE_bool("warmup", True, "Run each method once untimed first (fills the compilation cache).")
_QUERIES = flags.DEFINE_list("max_queries", [], "Budget overrides, task:full trainings (e.g. naval:2 for a check).")
_ONE = flags.DEFINE_string("one", "", "Internal: run setting,task,method,rep in this process and write its JSON.")


def run_study(task: str, searcher: str, seed: int, workers: int, run_dir: str, max_queries: int) -> dict:
    from nas.host.study import Study

    study = Study(
        tt.space(task),
        searcher,
        direction="minimize",
        seed=seed,
        max_resource=max_queries * tt.TASKS[task]["fidelities"][-1],
        fidelities=tt.TASKS[task]["fidelities"],
        workers=workers,
        directory=os.path.join(run_dir, "ckpt"),
    )
    study.optimize(functools.partial(tt.study_objective, task, run_dir), n_workers=workers, backend="process")
    return {"evaluations": len(study.trials), "promotions": sum(t.parent is not None for t in study.trials)}


def run_optuna(task: str, seed: int, workers: int, run_dir: str, max_queries: int) -> dict:
    import threading

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    budgets = tt.TASKS[task]["fidelities"]
    total, spent, lock = max_queries * budgets[-1], [0.0], threading.Lock()

    def objective(trial):
        config = {}
        for name, values, when in tt.parameters(task):
            if not when or config[when[0]] in when[1]:
                config[name] = trial.suggest_categorical(name, values)
        tokens, folder = tt.tokens_of(task, config), tempfile.mkdtemp(dir=run_dir)
        for b in budgets:
            with lock:
                if spent[0] >= total:
                    raise optuna.TrialPruned()  # the budget is spent: no further training
            res = tt.train(task, tokens, b, folder, None, run_dir)
            with lock:
                spent[0] += res["cost"]
            trial.report(res["valid"], int(b))
            if trial.should_prune():
                raise optuna.TrialPruned()
        return res["valid"]

    def stop_when_spent(study, trial):
        if spent[0] >= total:
            study.stop()

    pruner = optuna.pruners.HyperbandPruner(min_resource=budgets[0], max_resource=budgets[-1], reduction_factor=3)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed), pruner=pruner)
    study.optimize(objective, n_jobs=workers, callbacks=[stop_when_spent])
    return {"evaluations": len(study.trials)}


def _ray_trainable(task: str, run_dir: str):
    """A Tune function trainable: trains along the ladder, reporting each budget with its checkpoint."""

    def trainable(config):
        from ray import tune

        tokens, folder, start = tt.tokens_of(task, config), tempfile.mkdtemp(dir=run_dir), 0
        resume, checkpoint = None, tune.get_checkpoint()
        if checkpoint is not None:
            resume = checkpoint.to_directory(tempfile.mkdtemp(dir=run_dir))
            with open(os.path.join(resume, "budget.json")) as f:
                start = json.load(f)["budget"]
        for b in tt.TASKS[task]["fidelities"]:
            if b <= start:
                continue
            res = tt.train(task, tokens, b, folder, resume, run_dir)
            with open(os.path.join(folder, "budget.json"), "w") as f:
                json.dump({"budget": b}, f)
            tune.report(
                {"valid": res["valid"], "budget": b, "cost": res["cost"]},
                checkpoint=tune.Checkpoint.from_directory(folder),
            )

    return trainable


def run_ray(task: str, method: str, seed: int, workers: int, run_dir: str, max_queries: int) -> dict:
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.basic_variant import BasicVariantGenerator
    from ray.tune.stopper import Stopper

    class ComputeStopper(Stopper):
        """Stops the experiment once the training its trials reported adds up to the budget."""

        def __init__(self, total: float):
            self.total, self.spent = total, 0.0

        def __call__(self, trial_id, result) -> bool:
            self.spent += result.get("cost", 0.0)
            return False

        def stop_all(self) -> bool:
            return self.spent >= self.total

    budgets = tt.TASKS[task]["fidelities"]
    config = dict(metric="valid", mode="min", reuse_actors=True)
    stop = None
    if method == "ray_asha_random":
        space = {name: tune.choice(values) for name, values, _ in tt.parameters(task)}  # inactive ones: dropped
        scheduler = ASHAScheduler(time_attr="budget", grace_period=budgets[0], max_t=budgets[-1], reduction_factor=3)
        search = BasicVariantGenerator(random_state=seed, max_concurrent=workers)
        config.update(search_alg=search, scheduler=scheduler, num_samples=100_000)
        stop = ComputeStopper(max_queries * budgets[-1])
    else:
        from nas.adapters.ray_multi_fidelity import MultiFidelitySearch

        search = MultiFidelitySearch(
            method.removeprefix("ray_adapter_"),
            tt.space(task),
            fidelities=budgets,
            time_attr="budget",
            max_queries=max_queries,
            seed=seed,
            workers=workers,
        )
        space = {}
        config.update(search_alg=search, scheduler=search.scheduler, num_samples=-1)
    tuner = tune.Tuner(
        _ray_trainable(task, run_dir),
        param_space=space,
        tune_config=tune.TuneConfig(**config),
        run_config=tune.RunConfig(
            storage_path=os.path.join(run_dir, "ray"),
            stop=stop,
            verbose=0,
            failure_config=tune.FailureConfig(fail_fast=True),  # a broken trainable stops the run, loudly
        ),
    )
    results = tuner.fit()
    out = {"evaluations": len(results)}
    if method != "ray_asha_random":
        out["promotions"] = sum(t.parent is not None for t in search.study.trials)
    return out


class TreeCPU:
    """CPU seconds of this process and all its descendants from ``start`` on (psutil, sampled every 0.5 s, so
    Ray's workers, which are not our children, count too; a process that lives under 0.5 s may be missed)."""

    def __init__(self):
        import threading

        import psutil

        self.me, self.seen, self.base = psutil.Process(), {}, {}
        self.base = dict(self._sample())
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _sample(self):
        import psutil

        for p in [self.me, *self.me.children(recursive=True)]:
            try:
                c = p.cpu_times()
                yield (p.pid, p.create_time()), c.user + c.system
            except psutil.Error:
                continue

    def _loop(self) -> None:
        while not self.done.wait(0.5):
            self.seen.update(self._sample())

    def stop(self) -> float:
        self.seen.update(self._sample())
        self.done.set()
        return sum(v - self.base.get(k, 0.0) for k, v in self.seen.items())


def one_run(setting: str, task: str, method: str, rep: int, out: str) -> None:
    """Runs one method once in this process and writes its segments (times relative to the start)."""
    workers, q = SETTINGS[setting]["workers"], budget_of(task)
    run_dir = tempfile.mkdtemp(prefix=f"tuner_{task}_{method}_")
    tt.load(task)
    if method.startswith("ray"):
        import ray

        # Ray renices its workers by +15 (its ``worker_niceness``): on a shared machine their trainings would get
        # less CPU than the other tools' workers, which keep this process's niceness. 0 keeps it for Ray too.
        os.environ.setdefault("RAY_worker_niceness", "0")
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    cpu, t0 = TreeCPU(), time.time()
    if method in OURS:
        info = run_study(task, method, rep, workers, run_dir, q)
    elif method == "optuna_hyperband_tpe":
        info = run_optuna(task, rep, workers, run_dir, q)
    else:
        info = run_ray(task, method, rep, workers, run_dir, q)
    wall, cpu_s = time.time() - t0, cpu.stop()
    segments = [{**s, "t": s["t"] - t0} for s in tt.read_segments(run_dir)]
    if method.startswith("ray"):
        import ray

        ray.shutdown()
    shutil.rmtree(run_dir, ignore_errors=True)
    record = {
        "setting": setting,
        "task": task,
        "method": method,
        "rep": rep,
        "seed": rep,
        "workers": workers,
        "max_queries": q,
        "budget": q * tt.TASKS[task]["fidelities"][-1],
        "fidelities": tt.TASKS[task]["fidelities"],
        "wall_s": wall,
        "cpu_s": cpu_s,
        **info,
        "segments": segments,
    }
    from spaces.files import write_text_atomic

    write_text_atomic(out, json.dumps(record))


def budget_of(task: str) -> int:
    """Full trainings of budget for ``task``: ``MAX_QUERIES`` or a ``--max_queries`` override."""
    given = dict(item.split(":") for item in _QUERIES.value)
    return int(given.get(task, MAX_QUERIES[task]))


def spawn(setting: str, task: str, method: str, rep: int, out: str) -> None:
    """``one_run`` in a fresh process."""
    cmd = [
        sys.executable,
        "-m",
        "scripts.experiments.tuner_comparison",
        f"--workdir={_WORKDIR.value}",
        f"--one={setting},{task},{method},{rep},{out}",
        f"--max_queries={','.join(_QUERIES.value)}",
    ]
    subprocess.run(cmd, check=True)


def main(argv):
    del argv
    if _ONE.value:
        setting, task, method, rep, out = _ONE.value.split(",")
        one_run(setting, task, method, int(rep), out)
        return
    setting = SETTINGS[_SETTING.value]
    methods = _METHODS.value or list(setting["methods"])
    bad = sorted(set(methods) - set(setting["methods"]))
    if bad:
        raise app.UsageError(f"--methods {bad} are not in setting {_SETTING.value!r}: {list(setting['methods'])}")
    runs = os.path.join(_WORKDIR.value, "runs")
    os.makedirs(runs, exist_ok=True)
    for task, reps in zip(_TASKS.value, _REPS.value):
        if _WARMUP.value:
            for method in methods:
                out = os.path.join(_WORKDIR.value, "warmup", f"{_SETTING.value}_{task}_{method}.json")
                if not os.path.exists(out):
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    spawn(_SETTING.value, task, method, 1000, out)
        for rep in range(int(reps)):
            order = methods[rep % len(methods) :] + methods[: rep % len(methods)]
            for method in order:
                out = os.path.join(runs, f"{_SETTING.value}_{task}_{method}_{rep}.json")
                if os.path.exists(out):
                    continue
                t = time.time()
                spawn(_SETTING.value, task, method, rep, out)
                print(f"{_SETTING.value} {task} {method} rep {rep}: {time.time() - t:.0f} s", flush=True)


if __name__ == "__main__":
    cli.run(main)
