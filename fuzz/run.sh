#!/usr/bin/env bash
# Builds (if needed) and runs every coverage-guided fuzz target of icefloe for SECONDS each,
# one after the other, on one core: `fuzz/run.sh 60` (default 60). Usable from `.ci/run`.
#
# - cargo-fuzz is installed from crates.io when missing; the targets build with the machine's
#   stable toolchain (RUSTC_BOOTSTRAP=1 lets it take libFuzzer's flags), without a sanitizer
#   (icefloe's code is safe Rust) but with debug assertions and overflow checks.
# - The build and the corpus live under ~/.cache/icefloe (ICEFLOE_FUZZ_TARGET,
#   ICEFLOE_FUZZ_CORPUS override), so later runs start warm and keep what earlier ones found.
#   The corpus is seeded from tests/fixtures (and $ICEFLOE_FIXTURES when set).
# - A crash, a timeout or an out-of-memory input stops the run with a non-zero exit; the input
#   is kept in $ICEFLOE_FUZZ_CORPUS/artifacts/<target>/ and `cargo fuzz run <target> <file>`
#   replays it.
set -euo pipefail

seconds="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
target_dir="${ICEFLOE_FUZZ_TARGET:-$HOME/.cache/icefloe/fuzz-target}"
corpus_root="${ICEFLOE_FUZZ_CORPUS:-$HOME/.cache/icefloe/fuzz-corpus}"
export RUSTC_BOOTSTRAP=1 CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install cargo-fuzz --locked --quiet
fi

targets=(metadata_json manifest_list manifest deletion_vector version_hint)

flags=(-O -a -s none --target-dir "$target_dir")
cd "$here"
started=$(date +%s)
# ICEFLOE_FUZZ_BUILD_SECONDS bounds the build (CI): a build that does not finish in time (its
# dependencies changed) is not a failure; the targets are not run, and the units built so far
# are kept, so the next run resumes where this one stopped.
build_budget="${ICEFLOE_FUZZ_BUILD_SECONDS:-0}"
build_status=0
if [ "$build_budget" -gt 0 ]; then
    timeout "$build_budget" cargo fuzz build "${flags[@]}" >&2 || build_status=$?
else
    cargo fuzz build "${flags[@]}" >&2 || build_status=$?
fi
if [ "$build_status" -eq 124 ]; then
    echo "fuzz: the build did not finish within ${build_budget} s: the fuzz targets were NOT run"
    echo "      this time (what was built is kept; the next run resumes it)"
    exit 0
elif [ "$build_status" -ne 0 ]; then
    echo "fuzz: the build failed (exit $build_status)"
    exit "$build_status"
fi
echo "fuzz: build took $(($(date +%s) - started)) s"

# Seeds: the fixtures' files of each kind, smallest first (libFuzzer keeps what is new).
seed() {
    local name="$1" dir="$corpus_root/$1"
    mkdir -p "$dir"
    [ -n "$(ls -A "$dir")" ] && return 0
    local roots=("$repo/tests/fixtures")
    [ -n "${ICEFLOE_FIXTURES:-}" ] && roots+=("$ICEFLOE_FIXTURES")
    python3 - "$name" "$dir" "${roots[@]}" <<'EOF'
import hashlib, os, sys
name, out, roots = sys.argv[1], sys.argv[2], sys.argv[3:]
MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
def keep(path, data):
    if name == "metadata_json":
        return path.endswith((".metadata.json", ".metadata.json.gz"))
    if name == "manifest_list":
        return path.endswith(".avro") and b'"manifest_path"' in data
    if name == "manifest":
        return path.endswith(".avro") and b'"data_file"' in data
    return False
def blobs(data):
    at = data.find(MAGIC)
    while at >= 4:
        size = int.from_bytes(data[at - 4:at], "big")
        blob = data[at - 4:at + size + 4]
        yield blob
        yield b"\x01" + blob[4:-4]  # framed by the target with a valid length and checksum
        at = data.find(MAGIC, at + 1)
found = []
for root in roots:
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            if os.path.getsize(path) > 64 << 10:
                continue
            data = open(path, "rb").read()
            if name == "deletion_vector":
                found += list(blobs(data)) if path.endswith(".puffin") else []
            elif name == "version_hint":
                found += [data] if f.startswith("version-hint") else []
            elif keep(path, data):
                found.append(data)
if name == "version_hint":
    found += [b"3", b"v12", b"00003-9c12d441-03fe-4693-9a96-a0705ddf69c1.metadata.json", b""]
for data in sorted(set(found), key=len)[:200]:
    open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb").write(data)
EOF
}

status=0
for target in "${targets[@]}"; do
    seed "$target"
    artifacts="$corpus_root/artifacts/$target"
    mkdir -p "$artifacts"
    dict=()
    [ -f "$here/dict/$target.dict" ] && dict=(-dict="$here/dict/$target.dict")
    log="$corpus_root/$target.log"
    if cargo fuzz run "${flags[@]}" "$target" "$corpus_root/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" >"$log" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
    corpus=$(ls "$corpus_root/$target" | wc -l)
    echo "fuzz: $target $result: $runs runs, $speed exec/s, $cov, corpus $corpus (log $log)"
    if [ "$result" = FAILED ]; then
        grep -E "panicked|ERROR|SUMMARY|Test unit written" "$log" | head -20 || true
    fi
done
exit "$status"
