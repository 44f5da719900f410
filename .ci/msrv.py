#!/usr/bin/env python3
"""Checks that each published crate's `rust-version` covers what its dependencies need.

For every published crate, and for each feature set (the default build, then each feature
alone), this resolves the dependency graph a user of that crate gets, walks its normal and
build dependencies (dev-dependencies are not compiled for users), and takes the highest
`rust-version` among the packages it reaches. That must not exceed the crate's declared
`rust-version`, or, for a feature whose higher MSRV the crate docs state, the MSRV written
in DOCUMENTED below.

Why a probe crate: `cargo metadata` resolves the whole workspace at once, so features are
unified across members (the `tests` crate turns every feature of `mcp-mrtr` on, and its
`--features` flags cannot turn them off again). A throwaway crate outside the workspace,
depending on one crate with exactly one feature set and using a copy of `Cargo.lock`,
resolves what a user would, at the versions the lockfile pins.

Standard library only. Exit status 1 names each dependency that needs a newer Rust.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# MSRVs above the declared `rust-version` that the crate docs state, per feature: the
# "Feature flags" table in each crate's src/lib.rs, which is checked against this.
DOCUMENTED = {
    "mcp-mrtr": {"jwt": "1.88", "redis": "1.88", "lambda": "1.88"},
}
# A row of that table: | `feature` | what it adds | MSRV |
FEATURE_ROW = re.compile(r"^//! \| `([\w-]+)` \|.*\| (\d+\.\d+(?:\.\d+)?) \|\s*$")
TARGET = "x86_64-unknown-linux-gnu"
DEFAULT = "(default)"


def cargo_metadata(manifest, *extra):
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--manifest-path", manifest, *extra],
        check=True,
        stdout=subprocess.PIPE,
    ).stdout
    return json.loads(out)


def version(text):
    """`1.88` and `1.88.0` compare equal; a missing `rust-version` is no constraint."""
    if not text:
        return (0, 0, 0)
    parts = [int(p) for p in text.split("-")[0].split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def show(v):
    return ".".join(str(p) for p in v[:2]) + (f".{v[2]}" if v[2] else "")


def stated(crate):
    """The per-feature MSRVs the crate's `src/lib.rs` table states."""
    lib = os.path.join(os.path.dirname(crate["manifest_path"]), "src", "lib.rs")
    with open(lib, encoding="utf-8") as f:
        return {m[1]: m[2] for m in map(FEATURE_ROW.match, f) if m}


def published(workspace):
    """The workspace's crates that can be published: `publish` is not `[]` (false)."""
    members = set(workspace["workspace_members"])
    return [p for p in workspace["packages"] if p["id"] in members and p.get("publish") != []]


def locked(lockfile):
    """(name, version) of every package in Cargo.lock, read without a TOML parser."""
    pins, name = set(), None
    with open(lockfile, encoding="utf-8") as f:
        for line in f:
            if line.startswith("name = "):
                name = line.split('"')[1]
            elif line.startswith("version = ") and name:
                pins.add((name, line.split('"')[1]))
                name = None
    return pins


def resolve(crate, feature, lockfile, scratch):
    """The metadata a user depending on `crate` with `feature` alone (or none) sees."""
    probe = os.path.join(scratch, f"probe-{crate['name']}-{feature or 'default'}")
    os.makedirs(os.path.join(probe, "src"))
    open(os.path.join(probe, "src", "lib.rs"), "w").close()
    shutil.copy(lockfile, os.path.join(probe, "Cargo.lock"))
    path = os.path.dirname(crate["manifest_path"])
    # Default features as a user gets them, or none plus the one feature (as
    # `--no-default-features --features X` would select on the crate itself).
    features = "" if feature is None else f', default-features = false, features = ["{feature}"]'
    with open(os.path.join(probe, "Cargo.toml"), "w", encoding="utf-8") as f:
        f.write(
            '[package]\nname = "msrv-probe"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
            f'[dependencies]\n{crate["name"]} = {{ path = {json.dumps(path)}{features} }}\n\n'
            "[workspace]\n"
        )
    return cargo_metadata(os.path.join(probe, "Cargo.toml"), "--filter-platform", TARGET)


def reachable(metadata, name):
    """Every package reachable from `name` through normal and build dependencies, highest
    rust-version first, each with the path to it."""
    packages = {p["id"]: p for p in metadata["packages"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    root = next(p["id"] for p in metadata["packages"] if p["name"] == name and p["source"] is None)
    parent, queue = {root: None}, [root]
    while queue:
        node = nodes[queue.pop()]
        for dep in node["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if (None in kinds or "build" in kinds) and dep["pkg"] not in parent:
                parent[dep["pkg"]] = node["id"]
                queue.append(dep["pkg"])

    def chain(at):
        names = []
        while at is not None:
            names.append(packages[at]["name"])
            at = parent[at]
        return " -> ".join(reversed(names))

    reached = sorted((i for i in parent if i != root), key=lambda i: version(packages[i]["rust_version"]), reverse=True)
    return [(packages[i], chain(i)) for i in reached]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    workspace = cargo_metadata(os.path.join(root, "Cargo.toml"), "--no-deps")
    lockfile = os.path.join(workspace["workspace_root"], "Cargo.lock")
    pins = locked(lockfile)
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="msrv-") as scratch:
        for crate in published(workspace):
            declared = version(crate["rust_version"])
            documented = DOCUMENTED.get(crate["name"], {})
            in_docs = {f: v for f, v in stated(crate).items() if version(v) > declared}
            if in_docs != documented:
                failures.append(f"{crate['name']}: src/lib.rs states {in_docs or 'no higher MSRV'}, DOCUMENTED says {documented or 'none'}")
            for feature in [None] + sorted(f for f in crate["features"] if f != "default"):
                metadata = resolve(crate, feature, lockfile, scratch)
                reached = reachable(metadata, crate["name"])
                top = reached[0][0] if reached else None
                unknown = sum(1 for p, _ in reached if not p["rust_version"])
                drifted = sorted({(p["name"], p["version"]) for p, _ in reached if p["source"]} - pins)
                if drifted:
                    failures.append(f"{crate['name']} {feature or DEFAULT}: resolved versions not in Cargo.lock: {drifted}")
                allowed = max(declared, version(documented.get(feature)))
                needed = version(top["rust_version"]) if top else (0, 0, 0)
                status = "ok" if needed <= allowed else "FAIL"
                if status == "ok" and feature in documented and needed < version(documented[feature]):
                    status = f"ok (docs say {documented[feature]}, {show(needed)} would do)"
                source = f"{top['name']} {top['version']}" if top else "-"
                rows.append((crate["name"], feature or DEFAULT, show(declared), show(allowed), show(needed), source, str(unknown), status))
                for package, path in reached:
                    if version(package["rust_version"]) <= allowed:
                        break
                    failures.append(
                        f"{crate['name']} {feature or DEFAULT}: {package['name']} {package['version']} needs Rust "
                        f"{package['rust_version']}, above {show(allowed)} ({path})"
                    )
    header = ("crate", "features", "declared", "allowed", "needed", "by", "no rust-version", "status")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    for failure in failures:
        print(f"msrv: {failure}", file=sys.stderr)
    if failures:
        print(
            "msrv: raise rust-version, document the feature's MSRV in src/lib.rs (and DOCUMENTED "
            "in .ci/msrv.py), or hold the dependency back",
            file=sys.stderr,
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
