"""Built-in searchers; importing this package registers them all."""

from nas.searchers import random_search  # noqa: F401
