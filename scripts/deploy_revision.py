"""Print the parameter overrides for `sam deploy`, ending with a ``DeployRevision`` computed from the build.

SAM publishes a new version of a function with ``AutoPublishAlias`` only when the hash of its
template properties changes; that hash sees neither the shared layer's content nor parameter
values (serverless-application-model issues 1777, 3610, 3820). ``template.yaml`` therefore
feeds ``AutoPublishCodeSha256`` from the ``DeployRevision`` parameter, which this script
computes as SHA-256 over

* every file of the built application (``sam build`` output: each function's code and
  dependencies, the layer), by relative path and content, and
* the parameter overrides themselves (the ``parameter_overrides`` of the samconfig.toml
  environment plus any given with ``--set``),

and prints the overrides with ``DeployRevision=<first 32 hex digits>`` appended. Any change of
code, dependency, layer or parameter value therefore publishes a new extract function version.

Usage::

    sam build
    sam deploy --config-env dev --parameter-overrides "$(python scripts/deploy_revision.py --config-env dev)"

(`make deploy ENV=dev` does both.) A ``--parameter-overrides`` flag replaces samconfig.toml's whole
string, which is why the output repeats it. Exit status 2 when the build directory is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import shlex
import sys
import tomllib
from pathlib import Path

#: Hex digits of the SHA-256 kept (template AllowedPattern: 16-64 lowercase hex digits).
REVISION_LENGTH = 32


def build_digest(build_dir: Path) -> hashlib._Hash:
    """SHA-256 over every regular file under ``build_dir``: relative path, NUL, size, NUL, bytes.

    Files are visited in sorted path order, so the digest does not depend on directory
    listing order; ``__pycache__`` folders are skipped (they hold timestamps, not code).
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in build_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        data = path.read_bytes()
        digest.update(path.relative_to(build_dir).as_posix().encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest


def overrides_from_samconfig(samconfig: Path, config_env: str) -> list[str]:
    """The ``Key=Value`` items of ``[<config_env>.deploy.parameters] parameter_overrides`` (empty if unset)."""
    if not samconfig.is_file():
        return []
    config = tomllib.loads(samconfig.read_text(encoding="utf-8"))
    value = config.get(config_env, {}).get("deploy", {}).get("parameters", {}).get("parameter_overrides", "")
    items = value if isinstance(value, list) else shlex.split(value)
    return [item for item in items if not item.startswith("DeployRevision=")]


def revision(build_dir: Path, overrides: list[str]) -> str:
    """The deploy revision: SHA-256 of the build (see :func:`build_digest`) and the sorted overrides."""
    digest = build_digest(build_dir)
    for item in sorted(overrides):
        digest.update(b"\1" + item.encode())
    return digest.hexdigest()[:REVISION_LENGTH]


def main(argv: list[str] | None = None) -> int:
    """Print ``<overrides> DeployRevision=<hex>`` (one line, shell-quoted items); return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=".aws-sam/build", type=Path)
    parser.add_argument("--samconfig", default="samconfig.toml", type=Path)
    parser.add_argument("--config-env", default="default")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra or replacing parameter override (repeatable)")
    args = parser.parse_args(argv)
    if not (args.build_dir / "template.yaml").is_file():
        print(f"no build in {args.build_dir}: run `sam build` first", file=sys.stderr)
        return 2
    items = {item.split("=", 1)[0]: item for item in overrides_from_samconfig(args.samconfig, args.config_env)}
    items.update({item.split("=", 1)[0]: item for item in args.set})
    overrides = list(items.values())
    print(" ".join(shlex.quote(item) for item in [*overrides, f"DeployRevision={revision(args.build_dir, overrides)}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
