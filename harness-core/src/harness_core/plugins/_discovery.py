"""Phase one of loading: read entry-point metadata without importing anything, then filter."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from .._entry_points import EntryPoint, entry_points, normalize

__all__ = ["GROUP", "Candidate", "discover", "select"]

GROUP: Final = "harness.plugins"

# Not "harness.plugins": `harness plugins` quiets that one, and these concern its output too.
logger = logging.getLogger("harness.config")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One `harness.plugins` entry point, as metadata."""

    name: str
    value: str
    dist: str
    version: str
    entry_point: EntryPoint

    def matches(self, wanted: set[str]) -> bool:
        return self.name in wanted or normalize(self.dist) in wanted


def discover(group: str = GROUP) -> list[Candidate]:
    """Every entry point of the group, sorted by (name, dist) for a deterministic load order."""
    found = [Candidate(ep.name, ep.value, ep.dist, ep.version, ep) for ep in entry_points(group)]
    return sorted(found, key=lambda c: (c.name, c.dist))


def _names(raw: str | None) -> set[str] | None:
    if raw is None:
        return None
    # Entry-point names are matched as written, distribution names normalized (PEP 503).
    names = {n.strip() for n in raw.split(",") if n.strip()}
    return names | {normalize(n) for n in names}


def select(
    candidates: Iterable[Candidate], env: Mapping[str, str]
) -> tuple[list[Candidate], list[tuple[Candidate, str]]]:
    """Apply HARNESS_LOAD_PLUGINS (allow list) and HARNESS_DISABLE_PLUGINS (deny list).

    Returns the candidates to load and the disabled ones with the reason. A name that matches
    no candidate is warned about: a typo would otherwise silently load or skip everything.
    """
    candidates = list(candidates)
    for variable in ("HARNESS_LOAD_PLUGINS", "HARNESS_DISABLE_PLUGINS"):
        _warn_unmatched(variable, env.get(variable), candidates)
    allow = _names(env.get("HARNESS_LOAD_PLUGINS"))
    deny = _names(env.get("HARNESS_DISABLE_PLUGINS")) or set()
    chosen: list[Candidate] = []
    disabled: list[tuple[Candidate, str]] = []
    for candidate in candidates:
        if candidate.matches(deny):
            disabled.append((candidate, "listed in HARNESS_DISABLE_PLUGINS"))
        elif allow is not None and not candidate.matches(allow):
            disabled.append((candidate, "not listed in HARNESS_LOAD_PLUGINS"))
        else:
            chosen.append(candidate)
    return chosen, disabled


def _warn_unmatched(variable: str, raw: str | None, candidates: list[Candidate]) -> None:
    if raw is None:
        return
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names and variable == "HARNESS_LOAD_PLUGINS":
        logger.warning("HARNESS_LOAD_PLUGINS is empty: no plugin loads (unset it to load all)")
    installed = ", ".join(sorted({c.name for c in candidates})) or "none"
    for name in names:
        if not any(c.matches({name, normalize(name)}) for c in candidates):
            logger.warning(
                "%s names %r, which matches no installed plugin (installed: %s)",
                variable,
                name,
                installed,
            )
