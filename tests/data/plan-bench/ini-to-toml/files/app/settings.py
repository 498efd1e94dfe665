"""The app's settings, read from config/app.toml."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent.parent / "config" / "app.toml"


@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    workers: int
    database_url: str
    pool_size: int
    cache: bool
    beta_banner: bool


def load(path: Path = DEFAULT) -> Settings:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    return Settings(
        host=data["server"]["host"],
        port=data["server"]["port"],
        workers=data["server"]["workers"],
        database_url=data["database"]["url"],
        pool_size=data["database"]["pool_size"],
        cache=data["features"]["cache"],
        beta_banner=data["features"]["beta_banner"],
    )
