"""Run a private top-k experiment from a clone: ``python topk.py [topk_experiment=flat|repeated|checkin] [key=value
...]``, the same command as the installed ``pate-topk`` (``pate/pipeline/topk.py``)."""

from pate.pipeline.topk import cli, main, run

__all__ = ["cli", "main", "run"]

if __name__ == "__main__":
    cli()
