"""Built-in searchers; importing this package registers them all."""

from nas.searchers import local_search, random_search, regularized_evolution  # noqa: F401
