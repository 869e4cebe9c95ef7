#!/usr/bin/env bash
# Regenerates the parameter tables in the method pages of docs/ from the field tables in the code
# (tests/cli checks that they agree). Each table sits between <!-- NAME:begin ... --> and
# <!-- NAME:end --> in the page of its method. Usage: bash scripts/readme_tables.sh [path/to/orrery]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/orrery}
fill() {  # fill MARKER METHOD FILE
  local table
  table=$("$bin" defaults "$2" --markdown)
  grep -q -- "<!-- $1:begin" "$3" || { echo "readme_tables.sh: no marker $1 in $3" >&2; exit 1; }
  TABLE="$table" perl -0pi -e 's/(<!-- '"$1"':begin[^\n]*-->\n).*?(<!-- '"$1"':end -->)/$1$ENV{TABLE}\n$2/s' "$3"
}
fill pe-params pe docs/pe.md
fill posterior-model-params posterior_model docs/pe.md
fill pe-input pe_input docs/pe.md
fill hssne-params hssne docs/hssne.md
fill hssne-input hssne_input docs/hssne.md
fill nerv-params nerv docs/nerv.md
fill snerv-input snerv_input docs/nerv.md
fill metric-params metric docs/nerv.md
fill plsv-params plsv docs/plsv.md
fill plsv-input plsv_input docs/plsv.md
fill text-input text docs/plsv.md
