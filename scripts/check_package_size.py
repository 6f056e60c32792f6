"""Build the SAM application (cached) and measure each function's unzipped size with its layers.

Lambda's limit is 250 MB unzipped for a function plus all its layers
(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). Prints one line
per function (its code and locked dependencies + the layers it uses, in MB) with its ten
largest packages, and the ten largest packages of each layer; exits 1 when any function is
over ``--limit`` (default 250 MB) and marks it "over aim" when it is over ``--aim``
(default 150 MB).

Usage: python scripts/check_package_size.py [--sam PATH] [--build-dir DIR] [--no-build]
`sam build` needs python3.12 on PATH (the Makefile prepends it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import yaml

MB = 1024 * 1024


def largest(root: Path, count: int = 10) -> str:
    """``"name MB, ..."`` for the ``count`` largest entries directly under ``root`` (MB rounded)."""
    if not root.is_dir():
        return ""
    sizes = sorted(((tree_size(p) if p.is_dir() else p.stat().st_size, p.name) for p in root.iterdir()),
                   reverse=True)[:count]
    return ", ".join(f"{n} {s / MB:.0f}" for s, n in sizes)


def tree_size(path: Path) -> int:
    """Total bytes of regular files under ``path`` (symlinks not followed)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _loader() -> type[yaml.SafeLoader]:
    class Loader(yaml.SafeLoader):
        pass

    def any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> object:
        if isinstance(node, yaml.ScalarNode):
            return {suffix: loader.construct_scalar(node)}
        if isinstance(node, yaml.SequenceNode):
            return {suffix: loader.construct_sequence(node)}
        return {suffix: loader.construct_mapping(node)}

    Loader.add_multi_constructor("!", any_tag)
    return Loader


def main(argv: list[str] | None = None) -> int:
    """Build (unless --no-build), measure, print; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sam", default=os.environ.get("SAM", "sam"))
    parser.add_argument("--template", default="template.yaml")
    parser.add_argument("--build-dir", default=".aws-sam/size-build")
    parser.add_argument("--cache-dir", default=".aws-sam/size-cache")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--limit", type=float, default=250.0)
    parser.add_argument("--aim", type=float, default=150.0)
    args = parser.parse_args(argv)
    build = Path(args.build_dir)
    if not args.no_build:
        subprocess.run([args.sam, "build", "--template", args.template, "--build-dir", str(build), "--cached",
                        "--cache-dir", args.cache_dir], check=True, stdout=subprocess.DEVNULL)
    template = yaml.load((build / "template.yaml").read_text(), Loader=_loader())
    resources = template["Resources"]
    global_layers = (template.get("Globals", {}).get("Function", {}) or {}).get("Layers", [])
    status = 0
    for name, res in sorted(resources.items()):
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        layers = res["Properties"].get("Layers", global_layers)
        layer_names = [layer.get("Ref") for layer in layers if isinstance(layer, dict)]
        code = tree_size(build / name)
        layer_bytes = {ln: tree_size(build / ln) for ln in layer_names}
        total = (code + sum(layer_bytes.values())) / MB
        verdict = "OVER LIMIT" if total > args.limit else ("over aim" if total > args.aim else "ok")
        parts = ", ".join(f"{ln} {b / MB:.1f} MB" for ln, b in layer_bytes.items())
        print(f"{name}: {total:.1f} MB unzipped (code {code / MB:.1f} MB; {parts}) "
              f"limit {args.limit:.0f} MB, aim {args.aim:.0f} MB: {verdict}")
        print(f"  {name} largest: {largest(build / name)}")
        if total > args.limit:
            status = 1
    for layer in sorted({ln for r in resources.values() if r.get("Type") == "AWS::Serverless::LayerVersion"
                         for ln in [next(k for k, v in resources.items() if v is r)]}):
        root = build / layer / "python"
        if root.is_dir():
            print(f"  {layer} largest: {largest(root)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
