"""Run the multi-label PATE pipeline from a clone: ``python train.py [group=option ...] [key=value ...]``, the same
command as the installed ``pate-train`` (``pate/pipeline/train.py``, which docs/architecture.md describes)."""

from pate.pipeline.train import cli, main

__all__ = ["cli", "main"]

if __name__ == "__main__":
    cli()
