"""A language for search spaces over computational graphs (DeepArchitect).

Negrinho, Patil, Le, Ferreira, Gormley and Gordon (2019), "Towards modular and programmable
architecture search". Search spaces are written as code: independent (``D``) and dependent
hyperparameters, basic modules (flax layers, ``flax_modules``), substitution modules resolved
lazily (``library``), ``connect``. See docs/reference/language.md.

Modules: ``hyperparameters``, ``core`` (graphs, Algorithm 1 transitions, Algorithms 2 and 5
traversals), ``library`` (substitution modules), ``flax_modules`` (basic modules), ``compile``
(Algorithm 4, a terminal space -> flax model), ``architecture`` (``Architecture``: the values
assigned along a traversal, as JSON), ``search_space`` (``LanguageSpace``), ``counting``,
``flatten`` (a bounded space -> ``spaces.base.Space``), ``examples`` (the paper's figures),
``datasets`` (digits, diabetes, optional CIFAR-10),
``training`` (optax training of compiled networks, vmapped per signature), ``tasks`` (spaces
paired with data: host-side objectives), ``table1`` (the paper's Table 1 spaces at digits size),
``cells`` (NAS-Bench-101/201 cells and networks; a table's cell -> its language assignment).
"""

from spaces.language.architecture import Architecture
from spaces.language.compile import CompiledNetwork, compile_graph, plan_of
from spaces.language.core import (
    BasicModule,
    Graph,
    InvalidArchitecture,
    SubstitutionModule,
    UnboundedSpaceError,
    build,
    ordered_hyperparameters,
    ordered_modules,
    topological_modules,
    unassigned_independent,
    unassigned_now,
)
from spaces.language.hyperparameters import Constant, D, DependentHyperparameter, IndependentHyperparameter
from spaces.language.search_space import LanguageSpace, random_specify, specify

__all__ = [
    "Architecture",
    "BasicModule",
    "CompiledNetwork",
    "Constant",
    "D",
    "DependentHyperparameter",
    "Graph",
    "InvalidArchitecture",
    "IndependentHyperparameter",
    "LanguageSpace",
    "SubstitutionModule",
    "UnboundedSpaceError",
    "build",
    "compile_graph",
    "ordered_hyperparameters",
    "ordered_modules",
    "plan_of",
    "random_specify",
    "specify",
    "topological_modules",
    "unassigned_independent",
    "unassigned_now",
]
