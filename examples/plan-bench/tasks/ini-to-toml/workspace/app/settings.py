"""The app's settings, read from config/app.ini."""

import configparser
from dataclasses import dataclass
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent.parent / "config" / "app.ini"


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
    parser = configparser.ConfigParser()
    if not parser.read(path):
        raise FileNotFoundError(path)
    return Settings(
        host=parser["server"]["listen"],
        port=parser["server"].getint("port"),
        workers=parser["server"].getint("workers"),
        database_url=parser["database"]["db_url"],
        pool_size=parser["database"].getint("db_pool"),
        cache=parser["features"].getboolean("enable_cache"),
        beta_banner=parser["features"].getboolean("beta_banner"),
    )
