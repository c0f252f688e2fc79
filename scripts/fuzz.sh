#!/usr/bin/env bash
# Builds the readers' libFuzzer targets (build-fuzz/: clang-22, AddressSanitizer
# and UBSan; test/fuzz) and runs each one, seeded with files the full build's
# tools make (a small model's executable, cache entry and checkpoint, HDF5 and
# TFRecord shards, the configs) and with the regression inputs kept in
# test/fuzz/corpus/<target>/. A crash, hang, leak or sanitizer report fails
# the run and leaves the input in build-fuzz/artifacts/.
#
# Environment: FERRY_FUZZ_SECONDS per target (default 30), or FERRY_FUZZ_RUNS
# executions per target instead; FERRY_FUZZ_SEED (default: a new one each run)
# makes a run of FERRY_FUZZ_RUNS repeatable, as the test command's is; FERRY_FUZZ_TARGETS (default all nine);
# TOOLS_DIR (default build/bin: a full build's ferry and ferry-datagen);
# FUZZ_BUILD_DIR (default build-fuzz). Prints one line per target with its
# executions, time and rate (docs/reliability.md records long runs).
set -euo pipefail
cd "$(dirname "$0")/.."

tools=${TOOLS_DIR:-build/bin}
fuzz_dir=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FERRY_FUZZ_SECONDS:-30}
runs=${FERRY_FUZZ_RUNS:-}
seed=${FERRY_FUZZ_SEED:-0}
targets=${FERRY_FUZZ_TARGETS:-safetensors hdf5 tfrecord executable config checkpoint cache-entry text squad}

for tool in ferry ferry-datagen; do
  if [[ ! -x $tools/$tool ]]; then
    echo "fuzz: $tools/$tool is missing; build ferry first (bash scripts/build.sh) or set TOOLS_DIR" >&2
    exit 1
  fi
done
if ! command -v clang++-22 >/dev/null; then
  echo "fuzz: clang++-22 is missing; run scripts/install-deps.sh (clang-22, libclang-rt-22-dev, libomp-22-dev)" >&2
  exit 1
fi

echo "== fuzz build ($fuzz_dir) =="
CC=clang-22 CXX=clang++-22 cmake -S . -B "$fuzz_dir" -DCMAKE_BUILD_TYPE=Release \
  -DFERRY_FUZZ=ON -DFERRY_BUILD_COMPILER=OFF -DFERRY_ENABLE_CUDA=OFF -DFERRY_ENABLE_MPI=OFF >/dev/null
cmake --build "$fuzz_dir" -j "${JOBS:-2}" --target ferry-fuzzers >/dev/null

echo "== seeds =="
seeds=$fuzz_dir/seeds
rm -rf "$seeds" && mkdir -p "$seeds"/{safetensors,hdf5,tfrecord,executable,config,checkpoint,cache-entry,text,squad}
micro=test/fuzz/micro.yaml
export FERRY_CACHE_DIR=$seeds/cache
"$tools/ferry" compile "$micro" -o "$seeds/micro.fxe" >/dev/null
cp "$seeds/micro.fxe" "$seeds/executable/resident.fxe"
"$tools/ferry" compile "$micro" --set execution.mode=phased --set execution.recompute=layer \
  -o "$seeds/executable/phased.fxe" >/dev/null
cp "$FERRY_CACHE_DIR"/*.fxc "$seeds/cache-entry/"
"$tools/ferry-datagen" --format hdf5 --seq 16 --predictions 4 --vocab 64 --samples 3 --seed 1 \
  -o "$seeds/hdf5/three.hdf5" >/dev/null
"$tools/ferry-datagen" --format tfrecord --seq 16 --predictions 4 --vocab 64 --samples 3 --seed 1 \
  -o "$seeds/tfrecord/three.tfrecord" >/dev/null
# Packed rows (ferry-datagen --pack) of a few lines of letters, with a
# vocabulary inside the fuzz shape's 64 ids.
mkdir -p "$seeds/text-corpus"
{ printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'; printf '%s\n' a b c d e f g h i j k l m n o; } > "$seeds/letters.txt"
printf 'a b c\nd e\n\nf g h\ni j\n\nk l\nm n o\n\na d\ng\n' > "$seeds/text-corpus/letters"
for format in hdf5 tfrecord; do
  "$tools/ferry-datagen" --from-text "$seeds/text-corpus" --vocab "$seeds/letters.txt" --format $format \
    --seq 16 --predictions 4 --dupe-factor 3 --seed 1 --pack --max-sequences-per-pack 3 -o "$seeds/packed-$format" >/dev/null
  cp "$seeds/packed-$format/part-00000-of-00001.$format" "$seeds/$format/packed.$format"
done
"$tools/ferry" train "$seeds/micro.fxe" --steps 2 --log-every 0 --save "$seeds/ckpt" >/dev/null
step=$seeds/ckpt/$(cat "$seeds/ckpt/latest")
cp "$step/model.safetensors" "$seeds/safetensors/model.safetensors"
cp "$step/optimizer.safetensors" "$seeds/safetensors/optimizer.safetensors"
python3 - "$step" "$seeds/checkpoint/step" <<'PY'
import struct, sys
step, out = sys.argv[1], sys.argv[2]
parts = [open(f"{step}/{name}", "rb").read()
         for name in ("trainer.json", "optimizer.safetensors", "model.safetensors")]
with open(out, "wb") as f:  # the packing CheckpointFuzzer.cpp reads
    for part in parts[:2]:
        f.write(struct.pack("<I", len(part)) + part)
    f.write(parts[2])
PY
cp configs/*.yaml test/tools/Inputs/*.yaml "$micro" "$seeds/config/"
head -c 4000 /usr/share/common-licenses/Apache-2.0 > "$seeds/text/apache.txt"
cp test/e2e/Inputs/unicode-lines.txt "$seeds/text/"
cp test/e2e/Inputs/squad/*.json "$seeds/squad/"
export FERRY_FUZZ_EXECUTABLE=$seeds/micro.fxe

if [[ -n $runs ]]; then
  echo "== fuzzing: $runs executions per target =="
else
  echo "== fuzzing: $seconds s per target =="
fi
mkdir -p "$fuzz_dir/artifacts"
status=0 passed=0 failed=0
for target in $targets; do
  work=$fuzz_dir/corpus/$target
  if [[ $seed != 0 ]]; then
    # A seeded run starts from the kept corpus alone, so it repeats exactly.
    work=$fuzz_dir/corpus-seeded/$target
    rm -rf "$work"
  fi
  mkdir -p "$work" "test/fuzz/corpus/$target"
  limit=(-max_total_time="$seconds")
  [[ -n $runs ]] && limit=(-runs="$runs")
  limit+=(-seed="$seed")
  log=$fuzz_dir/$target.log
  # For libhdf5 alone (docs/reliability.md): its own leaks on damaged files
  # are suppressed (test/fuzz/hdf5-leaks.supp); a damaged header makes it
  # malloc a metadata buffer of the size the file claims, which glibc's
  # malloc grants lazily (or refuses past the machine's memory) and libhdf5
  # frees once the read falls short, so for this target ASan returns null
  # past 1 TiB as glibc would, and single mallocs are not capped (the RSS
  # limit still is).
  lsan="" asan="" extra=()
  if [[ $target == hdf5 ]]; then
    lsan="suppressions=$PWD/test/fuzz/hdf5-leaks.supp"
    asan="allocator_may_return_null=1"
    extra=(-malloc_limit_mb=1048576)
  fi
  start=$(date +%s.%N)
  if LSAN_OPTIONS=$lsan ASAN_OPTIONS=$asan "$fuzz_dir/bin/ferry-fuzz-$target" "${limit[@]}" "${extra[@]}" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$fuzz_dir/artifacts/$target-" \
       "$work" "test/fuzz/corpus/$target" "$seeds/$target" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  [[ $result == ok ]] && passed=$((passed + 1)) || failed=$((failed + 1))
  end=$(date +%s.%N)
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  python3 -c "import sys; n, t = int(sys.argv[1]), float(sys.argv[3]) - float(sys.argv[2]); \
print(f'fuzz {sys.argv[4]:<12} {sys.argv[5]:<6} {n:>9} executions in {t:6.1f} s ({n / t:8.0f}/s)')" \
    "$execs" "$start" "$end" "$target" "$result"
  if [[ $result != ok ]]; then
    echo "--- $log (last 40 lines) ---"
    tail -40 "$log"
  fi
done
echo "fuzz: $passed passed, $failed failed"
exit $status
