#!/usr/bin/env bash
# Regenerates the parameter tables in README.md from the field tables in the code
# (tests/cli checks that they agree). Usage: bash scripts/readme_tables.sh [path/to/orrery]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/orrery}
fill() {  # fill MARKER METHOD
  local table
  table=$("$bin" defaults "$2" --markdown)
  TABLE="$table" perl -0pi -e 's/(<!-- '"$1"':begin[^\n]*-->\n).*?(<!-- '"$1"':end -->)/$1$ENV{TABLE}\n$2/s' README.md
}
fill pe-params pe
fill posterior-model-params posterior_model
fill hssne-params hssne
fill nerv-params nerv
fill metric-params metric
fill plsv-params plsv
fill pe-input pe_input
fill hssne-input hssne_input
fill snerv-input snerv_input
fill plsv-input plsv_input
fill text-input text
