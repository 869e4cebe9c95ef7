#!/usr/bin/env bash
# Builds the offline demo corpus for PLSV from the Debian package index that apt already holds:
# one document per package = its long description (continuation lines joined, the " ." paragraph
# markers removed), labelled with its archive section ("contrib/games" -> "games").
#
#   scripts/debian_corpus.sh [-o OUT_DIR] [-n MAX_PER_SECTION] [-s "SECTION ..."] [-l]
#     -o  output directory (default: data/debian in the repository)
#     -n  at most this many documents per section (default 200)
#     -s  sections, separated by spaces or commas (default: games science sound graphics database
#         net devel math electronics fonts web mail: topics apart from each other)
#     -l  local only: never run apt-get update to fetch missing English descriptions
#
# Writes OUT_DIR/docs.txt (one document per line; read it with the "text" corpus format),
# OUT_DIR/labels.txt (the section of each line) and OUT_DIR/packages.txt (the package of each line).
# Deterministic: packages are taken in order of name (C locale), the first MAX_PER_SECTION of each
# section; a package whose description repeats an earlier one word for word (a -data or -dbg
# companion) is left out.
#
# Where the text comes from: `apt-cache dumpavail` gives each package's section and, on older
# archives, its long description. Current Debian indexes carry only the one-line synopsis there and
# ship the long text in the Translation-en indexes, matched by Description-md5; those are read too
# when apt has them. Docker images usually set Acquire::Languages "none" and so lack them; then this
# script fetches them with `apt-get -o Acquire::Languages=en update` (through sudo when not root;
# -l forbids it) and reads them. Under that setting `apt-get indextargets` lists the English
# indexes only when given the same option, so it is always asked with it. (A later plain
# `apt-get update` under that setting removes them again.) APT_CONFIG is honoured.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/data/debian"
max=200
sections="games science sound graphics database net devel math electronics fonts web mail"
fetch=1

usage() { sed -n '6,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while getopts "o:n:s:lh" opt; do
  case $opt in
    o) out=$OPTARG ;;
    n) max=$OPTARG ;;
    s) sections=$(printf '%s' "$OPTARG" | tr ',' ' ') ;;
    l) fetch=0 ;;
    h) usage 0 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "debian_corpus.sh: unexpected argument '$1'" >&2; usage; }
case $max in ''|*[!0-9]*|0) echo "debian_corpus.sh: -n expects a whole number >= 1, found '$max'" >&2; exit 2 ;; esac
[ -n "$(printf '%s' "$sections" | tr -d ' ')" ] || { echo "debian_corpus.sh: -s names no section" >&2; exit 2; }
command -v apt-cache >/dev/null || { echo "debian_corpus.sh: apt-cache not found (this needs a Debian-based system)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Reads apt's index into $tmp/candidates ("package<TAB>section<TAB>text" per described package of a
# wanted section) and $tmp/missing (how many of those packages have no long description).
read_index() {
  apt-cache dumpavail >"$tmp/packages"
  : >"$tmp/translations"
  helper=/usr/lib/apt/apt-helper
  # The option makes apt list the English indexes even where Acquire::Languages is "none".
  # shellcheck disable=SC2016  # $(FILENAME) is apt's template, not a command substitution
  apt-get -o Acquire::Languages=en indextargets --format '$(FILENAME)' 'Created-By: Translations' 'Language: en' 2>/dev/null |
    while IFS= read -r f; do
      [ -f "$f" ] || continue
      if [ -x "$helper" ]; then "$helper" cat-file "$f"; else cat "$f"; fi >>"$tmp/translations"
      echo >>"$tmp/translations"
    done

  # Both inputs are stanzas of "Field: value" lines; a description's long text is its continuation
  # lines. Prints "package<TAB>section<TAB>text" for each package of a wanted section that has one.
  awk -v sections="$sections" -v pkgfile="$tmp/packages" -v dir="$tmp" '
    function flush() {
      if (src == pkgfile) {
        if (pkg != "" && sec in wanted) { order[++n] = pkg; section[pkg] = sec; md5[pkg] = sum; text[pkg] = long }
      } else if (sum != "" && long != "" && !(sum in translated)) {
        translated[sum] = long
      }
      pkg = sec = sum = long = ""; indesc = 0
    }
    BEGIN { k = split(sections, s, " "); for (i = 1; i <= k; i++) wanted[s[i]] = 1 }
    FILENAME != src { flush(); src = FILENAME }
    /^[ \t]*$/ { flush(); next }
    /^[ \t]/ {
      if (!indesc) next
      line = $0; sub(/^[ \t]+/, "", line); gsub(/[ \t\r]+/, " ", line); sub(/ $/, "", line)
      if (line == ".") next
      long = long == "" ? line : long " " line
      next
    }
    {
      indesc = 0
      field = $0; sub(/:.*/, "", field)
      value = $0; sub(/^[^:]*:[ \t]*/, "", value); sub(/[ \t\r]+$/, "", value)
      if (field == "Package") pkg = value
      else if (field == "Section") { sec = value; sub(/^.*\//, "", sec) }
      else if (field == "Description-md5") sum = value
      else if (field == "Description" || field == "Description-en") indesc = 1
    }
    END {
      flush()
      for (i = 1; i <= n; i++) {
        p = order[i]; t = text[p]
        if (t == "" && md5[p] in translated) t = translated[md5[p]]
        if (t != "") print p "\t" section[p] "\t" t
        else missing++
      }
      print missing + 0 > (dir "/missing")
    }
  ' "$tmp/packages" "$tmp/translations" >"$tmp/candidates"
}

# An index with the synopsis only leaves (nearly) every package without text.
described() { [ "$(wc -l <"$tmp/candidates" | tr -d ' ')" -gt "$(cat "$tmp/missing")" ]; }

read_index
if ! described && [ "$fetch" -eq 1 ]; then
  echo "debian_corpus.sh: apt's index holds only the one-line synopses; fetching the English" \
    "descriptions: apt-get -o Acquire::Languages=en update" >&2
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "debian_corpus.sh: not root and no sudo: run as root:  apt-get -o Acquire::Languages=en update" >&2; exit 1; }
    sudo_cmd="sudo"
  fi
  $sudo_cmd ${APT_CONFIG:+"APT_CONFIG=$APT_CONFIG"} apt-get -qq -o Acquire::Languages=en update >&2 ||
    { echo "debian_corpus.sh: apt-get -o Acquire::Languages=en update failed" >&2; exit 1; }
  read_index
fi

# Say how to fix it rather than write a corpus of a handful of documents.
if ! described; then
  total=$(wc -l <"$tmp/candidates" | tr -d ' ')
  echo "debian_corpus.sh: only $total of $((total + $(cat "$tmp/missing"))) packages of the sections '$sections'" \
    "have a long description in apt's index." >&2
  echo "  This apt keeps only the one-line synopsis (Acquire::Languages \"none\", as in Docker images)." >&2
  echo "  Fetch the English descriptions with:  apt-get -o Acquire::Languages=en update" >&2
  echo "  (this script does so itself unless given -l)" >&2
  exit 1
fi

LC_ALL=C sort -t "$(printf '\t')" -k1,1 "$tmp/candidates" >"$tmp/sorted"
mkdir -p "$out"
awk -F '\t' -v max="$max" -v dir="$tmp" '
  $3 in seen { repeated++; next }
  { seen[$3] = 1 }
  count[$2] >= max { over++; next }
  {
    count[$2]++
    print $3 > (dir "/docs.txt"); print $2 > (dir "/labels.txt"); print $1 > (dir "/packages.txt")
  }
  END { print repeated + 0, over + 0 > (dir "/skipped") }
' "$tmp/sorted"

for f in docs.txt labels.txt packages.txt; do mv "$tmp/$f" "$out/$f"; done

read -r repeated over <"$tmp/skipped"
echo "debian_corpus.sh: $(wc -l <"$out/docs.txt" | tr -d ' ') documents in $out/docs.txt (labels.txt, packages.txt alongside)"
for s in $sections; do printf '  %-14s %s\n' "$s" "$(grep -cx -- "$s" "$out/labels.txt" || true)"; done
echo "  left out: $repeated repeating an earlier description, $over over $max per section," \
  "$(cat "$tmp/missing") without a long description"
