"""Every reported figure has one home, ``results/<name>.json``; the pages show it between markers.

    python -m scripts.results docs/research/results.md     # render the page's tables from results/
    python -m scripts.results --check                      # README.md and docs/**/*.md: exit 1 where a cell differs
    python -m scripts.results import /tmp/nas_default --name default_job --command "python -m scripts.train ..."
    python -m scripts.results import-bench /tmp/bench_tuner.json --name bench_tuner

In a page a rendered table sits between ``<!-- results: NAME -->`` (or ``NAME/TABLE``) and
``<!-- /results -->``; the renderer writes the table and a caption line that ends with the run's protocol,
spread, trials, seed, command, machine, date and versions. The file format: ``results/README.md``.
"""
