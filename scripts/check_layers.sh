#!/usr/bin/env bash
# The include layers of DESIGN.md, checked from the sources (a test runs this on the tree):
#   include/orrery/math   includes only itself (and the standard library): the shared arithmetic
#   include/orrery        public headers: no host/ internals and no kernel headers
#   host/methods          the papers' algorithms: no cpu/ or kernel headers, and no device tests
#                         (is_cuda, device_index, *_cuda calls): devices are reached through Backend
#   host/cli              config -> methods: the same
#   host/cpu              the CPU backend: no method internals (methods/, cli/)
#   kernels               the CUDA backend: no host internals (cpu/, methods/, cli/, io/, optim/, report/)
# Usage: bash scripts/check_layers.sh [ROOT]   (ROOT defaults to the repository). Prints each
# violation as FILE:LINE: RULE and exits 1 when there is any.
set -uo pipefail
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
violations include/orrery '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cpu|methods|cli|io|optim|report|kernels)/|^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.cuh"' \
  "public headers include no host internals or kernel headers" "${src[@]}"
for layer in host/methods host/cli; do
  violations "$layer" '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cpu/|kernels/)|^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.cuh"' \
    "$layer includes no cpu/ or kernel headers (devices are reached through Backend)" "${src[@]}"
  violations "$layer" '\bis_cuda\b|\bdevice_index\b|[A-Za-z0-9]_cuda[[:space:]]*\(' \
    "$layer does not ask which device it runs on" "${src[@]}"
done
violations host/cpu '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(methods|cli)/' \
  "host/cpu includes no method or CLI internals" "${src[@]}"
violations kernels '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cpu|methods|cli|io|optim|report)/' \
  "kernels include no host internals" "${src[@]}"

if [ $status -eq 0 ]; then echo "layers: ok"; fi
exit $status
