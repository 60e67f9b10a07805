"""Configs that run each method as its paper's text describes (``get_config(benchmark)``); every
deviation of the library's defaults from the text is an option, listed with its measured effect in
docs/research/fidelity.md."""
