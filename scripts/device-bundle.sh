#!/usr/bin/env bash
# device-bundle.sh — build, HERE, everything the GPU machine runs, into the ignored folder
# target/device-bundle/ (the GPU machine has the CUDA 13.0 toolkit and driver but no Rust and no
# internet, so it gets binaries):
#
#   target/device-bundle/
#     run.sh            runs the steps there: tests, memcheck, bench (see `run.sh --help`)
#     device-ab.sh      A/B of kernel files with this one build (variants/<name>/kernels/...)
#     payload.tar.gz    the binaries below, packed (run.sh unpacks them first; the device tool
#                       carries at most 64 MiB):
#     warpmap           the CLI (release)
#     tests/<name>      every test executable of the workspace (release, feature nccl on, so
#                       tests/nccl.rs is there too), named after its target:
#                       contract-1a2b3c... -> contract (the bench crate's: bench_kernels,
#                       outofcore); unit tests -> warpmap-unit, warpmap-bench-unit, warpmap-cli-unit
#     tests.txt         <name> <package dir relative to the repo> (run.sh runs each test there)
#     MANIFEST.txt      commit, build date, toolchain, sizes
#
# Then, with the device tool: run(carry=["target/device-bundle"],
#                                 command="target/device-bundle/run.sh")
# Logs, bench.json and bench.svg come back from $OUT (see README, "Developing with the GPU machine").
#
# Usage: scripts/device-bundle.sh     (WARPMAP_BUNDLE_BASE=PATH adds an earlier CLI as warpmap-base)
#   Debug info is stripped from the copies (about 12 MiB instead of 120 with the release
#   profile's line tables); the symbol table stays, so a panic's backtrace still names functions.
# Doc tests are not bundled (they need rustdoc); scripts/test runs them here.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0" >&2; exit 2 ;;
esac
say() { echo "device-bundle: $*" >&2; }
PY="${PYTHON:-python3}"
# Always <repo>/target/device-bundle (the path the device tool carries), whatever CARGO_TARGET_DIR.
BUNDLE="$ROOT/target/device-bundle"
t0=$SECONDS

# The GPU machine is x86-64 with glibc >= 2.34; binaries built here must match.
if [[ "$(uname -m)" != x86_64 ]]; then
  say "ERROR: this machine is $(uname -m); the GPU machine needs x86-64 binaries"
  exit 1
fi

JSON_TESTS="$(mktemp)"; JSON_CLI="$(mktemp)"
trap 'rm -f "$JSON_TESTS" "$JSON_CLI"' EXIT

# With the `nccl` feature, so that tests/nccl.rs is among the binaries (the others are the same
# with or without it; NCCL is loaded at run time, so nothing more is linked).
say "cargo test --workspace --release --no-run --features warpmap/nccl"
cargo test --workspace --release --no-run --features warpmap/nccl \
  --message-format=json-render-diagnostics > "$JSON_TESTS"
# The CLI with `nccl` too (its sharded bench's --exchange nccl), the same features as the tests.
say "cargo build --release -p warpmap-cli --features nccl"
cargo build --release -p warpmap-cli --features nccl \
  --message-format=json-render-diagnostics > "$JSON_CLI"

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/tests"

# Pick the executables out of cargo's JSON and give them stable, meaningful names.
"$PY" - "$ROOT" "$BUNDLE" "$JSON_TESTS" "$JSON_CLI" <<'EOF'
import json, os, shutil, sys
root, bundle, tests_json, cli_json = sys.argv[1:5]

def artifacts(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            m = json.loads(line)
            if m.get("reason") == "compiler-artifact" and m.get("executable"):
                yield m

def package_name(m):
    # "path+file:///work/main#warpmap@0.1.0", "path+file:///work/main/crates/warpmap-cli#0.1.0"
    # (name = last path part when it is omitted), or the old "warpmap 0.1.0 (path+file://...)".
    pid = m["package_id"]
    if "#" in pid:
        url, frag = pid.rsplit("#", 1)
        return frag.split("@", 1)[0] if "@" in frag else url.rstrip("/").rsplit("/", 1)[-1]
    return pid.split(" ", 1)[0]

tests = [m for m in artifacts(tests_json) if m["profile"].get("test")]  # not examples etc.
LIB_KINDS = ("lib", "rlib", "cdylib", "staticlib", "proc-macro")
with_lib = {package_name(m) for m in tests if m["target"]["kind"][0] in LIB_KINDS}
rows, used = [], set()
for m in tests:
    kind = m["target"]["kind"][0]
    tname = m["target"]["name"]
    pkg = package_name(m)
    if kind in LIB_KINDS:
        name = f"{pkg}-unit"                      # src/ unit tests of a library
    elif kind == "bin":
        name = f"{pkg}-bin-{tname}-unit" if pkg in with_lib else f"{pkg}-unit"
    elif kind == "test":
        name = tname                              # tests/<name>.rs
    else:
        name = f"{kind}-{tname}"
    base, i = name, 2
    while name in used:
        name, i = f"{base}-{i}", i + 1
    used.add(name)
    pkg_dir = os.path.relpath(os.path.dirname(m["manifest_path"]), root)
    shutil.copy2(m["executable"], os.path.join(bundle, "tests", name))
    rows.append((name, pkg_dir, m["executable"]))

cli = [m for m in artifacts(cli_json) if m["target"]["name"] == "warpmap" and "bin" in m["target"]["kind"]]
if not cli:
    sys.exit("device-bundle: cargo built no `warpmap` binary")
shutil.copy2(cli[-1]["executable"], os.path.join(bundle, "warpmap"))

with open(os.path.join(bundle, "tests.txt"), "w") as f:
    for name, pkg_dir, _ in sorted(rows):
        f.write(f"{name} {pkg_dir}\n")
for name, _, exe in sorted(rows):
    print(f"device-bundle:   tests/{name:<24} <- {os.path.relpath(exe, root)}", file=sys.stderr)
EOF

# --strip-debug keeps the symbol table: a panic's backtrace still names the functions.
strip --strip-debug "$BUNDLE/warpmap" "$BUNDLE"/tests/*

# A/B runs: WARPMAP_BUNDLE_BASE=<a warpmap CLI built from an earlier commit> travels as
# warpmap-base, so that one device call measures the earlier and the new code side by side
# (compare their JSONs with scripts/ab-compare.py).
if [[ -n "${WARPMAP_BUNDLE_BASE:-}" ]]; then
  strip --strip-debug -o "$BUNDLE/warpmap-base" "$WARPMAP_BUNDLE_BASE"
  say "warpmap-base <- $WARPMAP_BUNDLE_BASE"
fi

cp "$ROOT/scripts/device-run.sh" "$BUNDLE/run.sh"
cp "$ROOT/scripts/device-ab.sh" "$BUNDLE/device-ab.sh"
chmod +x "$BUNDLE/run.sh" "$BUNDLE/device-ab.sh" "$BUNDLE/warpmap" "$BUNDLE"/tests/*

commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
dirty=""
if [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then dirty=" (plus uncommitted changes)"; fi
{
  echo "commit: $commit$dirty"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "toolchain: $(rustc --version)"
  echo "debug info: stripped (symbols kept)"
  echo "files:"
  (cd "$BUNDLE" && find . -type f ! -name MANIFEST.txt | sort | xargs ls -l | awk '{printf "  %10d  %s\n", $5, $9}')
} > "$BUNDLE/MANIFEST.txt"

# Pack the binaries (about a quarter of their size): the device tool carries at most 64 MiB
# with the working tree, and the unpacked binaries alone came to over 60 MiB. run.sh unpacks
# payload.tar.gz on the GPU machine before anything else.
n_tests=$(ls "$BUNDLE/tests" | wc -l)
unpacked_kib=$(du -sk "$BUNDLE" | cut -f1)
tar -C "$BUNDLE" -czf "$BUNDLE/payload.tar.gz" warpmap tests $([[ -f "$BUNDLE/warpmap-base" ]] && echo warpmap-base)
rm -rf "$BUNDLE/warpmap" "$BUNDLE/tests" "$BUNDLE/warpmap-base"

size_kib=$(du -sk "$BUNDLE" | cut -f1)
say "bundle: $BUNDLE, $((size_kib / 1024)) MiB ($n_tests test binaries + warpmap, packed in payload.tar.gz; $((unpacked_kib / 1024)) MiB unpacked), built in $((SECONDS - t0)) s"
if (( size_kib > 48 * 1024 )); then
  say "WARNING: over 48 MiB; the device tool carries at most 64 MiB with the working tree"
fi
cat <<EOF >&2
device-bundle: next, with the device tool:
  run(carry=["target/device-bundle"], command="target/device-bundle/run.sh")
  (steps: run.sh [tests] [memcheck] [bench] [--quick] [--filter PATTERN]; default: all)
EOF
