"""``python train.py --help``: the config groups that train.py composes, read from its entry config's defaults
list (conf/ also holds topk.py's groups, which train.py does not accept)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from pate.locations import CONFIG_DIR


def config_groups(entry: str = "train", conf_dir: Path = CONFIG_DIR) -> dict[str, list[str]]:
    """Each group named in ``conf_dir/<entry>.yaml``'s defaults list (Hydra's own excepted) -> its options."""
    groups = {}
    for item in OmegaConf.load(conf_dir / f"{entry}.yaml").get("defaults", []):
        if isinstance(item, str) or "hydra" in item:
            continue
        (group,) = item.keys()
        groups[group] = sorted(path.stem for path in (conf_dir / group).glob("*.yaml"))
    return dict(sorted(groups.items()))


def groups_help(entry: str = "train") -> str:
    """One line per group: ``group: option, option, ...``."""
    return "\n".join(f"{group}: {', '.join(options)}" for group, options in config_groups(entry).items())


__all__ = ["config_groups", "groups_help"]
