#!/usr/bin/env bash
# The layers of DESIGN.md, checked from the sources (a test runs this on the tree):
#   include/orrery/math   includes only itself (and the standard library): the shared arithmetic
#   include/orrery        public headers: no host/ internals and no kernel headers
#   host/methods          the papers' algorithms: no cpu/ or kernel headers, and no device tests
#                         (is_cuda, device_index, *_cuda calls): devices are reached through Backend;
#                         no pipeline or CLI headers (run/, cli/)
#   host/run, host/cli    the pipeline and the commands: the same; host/run includes no cli/ header
#   python/src, bench     front ends of the pipeline: no cli/ header
#   host/prep             host primitives every backend uses: no backend, method or pipeline headers
#   host/cpu              the CPU backend: no method internals (methods/, run/, cli/)
#   host/comm             the communicators: no backend, method, pipeline or CLI headers (methods
#                         see Comm, not the other way round)
#   kernels               the CUDA backend: no host internals (cpu/, methods/, run/, cli/, io/, optim/,
#                         report/)
# and, with --objects BUILD_DIR, from the compiled objects: no object of host/methods, host/run or
# host/cli (BUILD_DIR/CMakeFiles/orrery_core.dir/host/<layer>/*.o) has an undefined reference to an
# orrery::cpu:: symbol or to make_cpu_backend (nm -C --undefined-only), so a method reaches the CPU
# only through a Backend it is given, however the call is spelled. host/cli/check.cpp is the one
# exception: `orrery check` makes the CPU reference to compare a device with.
# Usage: bash scripts/check_layers.sh [--objects BUILD_DIR] [ROOT]   (ROOT defaults to the
# repository). Prints each violation as FILE:LINE: RULE (OBJECT: SYMBOL: RULE for objects) and
# exits 1 when there is any, 2 when BUILD_DIR holds no method objects.
set -uo pipefail
objects=""
if [ "${1:-}" = "--objects" ]; then
  [ $# -ge 2 ] || { echo "usage: check_layers.sh [--objects BUILD_DIR] [ROOT]" >&2; exit 2; }
  objects=$(cd "$2" 2>/dev/null && pwd) || { echo "check_layers: no build directory '$2'" >&2; exit 2; }
  shift 2
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
status=0

# violations DIR PATTERN RULE [FILE-GLOBS...]: every line under DIR matching PATTERN is reported
# (and, with EXCEPT set, not matching EXCEPT).
EXCEPT=""
violations() {
  local dir=$1 pattern=$2 rule=$3
  shift 3
  [ -d "$dir" ] || return 0
  local hits
  hits=$(grep -rnE "$pattern" "$dir" "$@" 2>/dev/null)
  if [ -n "$EXCEPT" ] && [ -n "$hits" ]; then hits=$(grep -vE "$EXCEPT" <<<"$hits"); fi
  if [ -n "$hits" ]; then
    while IFS= read -r h; do echo "${h%%:*}:$(echo "$h" | cut -d: -f2): $rule"; done <<<"$hits"
    status=1
  fi
}

src=(--include=*.hpp --include=*.cpp --include=*.cuh --include=*.cu --include=*.in)

EXCEPT='#[[:space:]]*include[[:space:]]*"orrery/math/'
violations include/orrery/math '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
  "include/orrery/math includes only orrery/math/ headers" "${src[@]}"
EXCEPT=""
violations include/orrery '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cpu|prep|methods|run|cli|io|optim|report|kernels)/|^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.cuh"' \
  "public headers include no host internals or kernel headers" "${src[@]}"
for layer in host/methods host/run host/cli; do
  violations "$layer" '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cpu/|kernels/)|^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.cuh"' \
    "$layer includes no cpu/ or kernel headers (devices are reached through Backend)" "${src[@]}"
  violations "$layer" '\bis_cuda\b|\bdevice_index\b|[A-Za-z0-9]_cuda[[:space:]]*\(' \
    "$layer does not ask which device it runs on" "${src[@]}"
done
violations host/methods '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(run|cli)/' \
  "host/methods includes no pipeline or CLI headers (the pipeline calls the methods)" "${src[@]}"
violations host/run '^[[:space:]]*#[[:space:]]*include[[:space:]]*"cli/' \
  "host/run includes no CLI headers (every front end calls the pipeline)" "${src[@]}"
for front in python/src bench; do
  violations "$front" '^[[:space:]]*#[[:space:]]*include[[:space:]]*"cli/' \
    "$front calls the pipeline (run/), not the command line" "${src[@]}"
done
violations host/prep '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cpu|methods|run|cli|kernels)/|^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.cuh"' \
  "host/prep includes no backend, method, pipeline or CLI headers" "${src[@]}"
violations host/cpu '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(methods|run|cli)/' \
  "host/cpu includes no method, pipeline or CLI internals" "${src[@]}"
violations host/comm '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cpu|prep|methods|run|cli|kernels)/|^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.cuh"' \
  "host/comm includes no backend, method, pipeline or CLI headers" "${src[@]}"
violations kernels '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cpu|methods|run|cli|io|optim|report)/' \
  "kernels include no host internals" "${src[@]}"

# The symbols: what the method, pipeline and CLI objects leave for the linker to find.
if [ -n "$objects" ]; then
  dir="$objects/CMakeFiles/orrery_core.dir/host"
  found=0
  for layer in methods run cli; do
    for obj in "$dir/$layer"/*.o; do
      [ -e "$obj" ] || continue
      found=$((found + 1))
      [ "$layer/$(basename "$obj")" = "cli/check.cpp.o" ] && continue  # orrery check: the CPU reference
      while IFS= read -r sym; do
        [ -n "$sym" ] || continue
        echo "${obj#"$objects"/}: $sym: host/$layer reaches the CPU only through a Backend it is given"
        status=1
      done < <(nm -C --undefined-only "$obj" | sed -E 's/^[[:space:]]*U[[:space:]]+//' |
               grep -E '(^|[^[:alnum:]_:])orrery::cpu::|(^|[^[:alnum:]_])make_cpu_backend\(')
    done
  done
  if [ $found -eq 0 ]; then
    echo "check_layers: no objects under $dir/{methods,run,cli}: build orrery_core first" >&2
    exit 2
  fi
fi

if [ $status -eq 0 ]; then echo "layers: ok"; fi
exit $status
