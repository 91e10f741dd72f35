#!/usr/bin/env bash
#
# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.  See the NOTICE file
# distributed with this work for additional information
# regarding copyright ownership.  The ASF licenses this file
# to you under the Apache License, Version 2.0 (the
# "License"); you may not use this file except in compliance
# with the License.  You may obtain a copy of the License at
#
#   http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an
# "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
# KIND, either express or implied.  See the License for the
# specific language governing permissions and limitations
# under the License.
#
# apply-series.sh SOURCES_JAR SERIES_DIR TARGET_DIR
#
# Unpacks an upstream -sources jar, applies SERIES_DIR/series in order (strictly: no fuzz, no
# reversed hunks), and leaves for the Maven build:
#   TARGET_DIR/patched-src/            only the files the series touches (compiled by the module)
#   TARGET_DIR/replaced-classes.txt    Ant patterns of the upstream classes they replace, nested
#                                      and anonymous ones included (left out of the drop-in jar)
#   TARGET_DIR/patch-series.properties patch.series and patch.series.sha256 for the jar manifest
# Patch paths are relative to the sources-jar root: a/org/apache/.../ManagedCursorImpl.java. A series
# names its own patches (NNNN-*.patch) and patches shared with other lines (../shared/NAME.patch: one file
# applied to each line that lists it, with offsets).
set -euo pipefail

sources_jar=$1
series_dir=$2
target=$3

work=$target/upstream-src
patched=$target/patched-src
rm -rf "$work" "$patched"
mkdir -p "$work" "$patched"
unzip -q -o "$sources_jar" -d "$work"

series_file=$series_dir/series
names=()
if [ -f "$series_file" ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}
    line=$(echo "$line" | tr -d '[:space:]')
    [ -n "$line" ] && names+=("$line")
  done < "$series_file"
fi

# Series hygiene: a patch changes .java files of its upstream module only (no patch(1) backup or other
# file swept into a commit), and its header says what, why, which upstream issue, and what it is meant
# to become upstream. A patch that re-adds a file the sources jar has fails to apply (--forward).
check_hygiene() {
  local name=$1 file=$2 paths field header
  paths=$(sed -n 's#^diff --git a/\([^ ]*\) b/\([^ ]*\)$#\1\n\2#p' "$file" | sort -u)
  if [ -z "$paths" ]; then
    echo "ERROR: patch $name (series $series_file) changes no file" >&2
    exit 1
  fi
  if echo "$paths" | grep -vqE '^[A-Za-z0-9_/$.-]+\.java$'; then
    echo "ERROR: patch $name (series $series_file) touches files that are not .java sources of the module:" >&2
    echo "$paths" | grep -vE '^[A-Za-z0-9_/$.-]+\.java$' | sed 's/^/    /' >&2
    echo "A patch(1) backup (.orig, .rej) or another file swept into a commit? Remove it from the commit." >&2
    exit 1
  fi
  # Read whole first: grep -q quitting early would end sed with SIGPIPE, a failure under pipefail once the
  # header is longer than sed's output buffer.
  header=$(sed -n '1,/^diff --git /p' "$file")
  for field in 'What:' 'Why:' 'Upstream issue:' 'Upstream intent:'; do
    if ! grep -q "^$field" <<<"$header"; then
      echo "ERROR: patch $name (series $series_file): its header has no '$field' line (README, patch headers)" >&2
      exit 1
    fi
  done
}

touched=$target/touched-files.txt
: > "$touched"
for name in "${names[@]+"${names[@]}"}"; do
  file=$series_dir/$name
  if [ ! -f "$file" ]; then
    echo "ERROR: $series_file lists $name, but $file does not exist" >&2
    exit 1
  fi
  check_hygiene "$name" "$file"
  if ! out=$(patch -p1 --fuzz=0 --forward --no-backup-if-mismatch --reject-file=- -d "$work" < "$file" 2>&1); then
    echo "ERROR: patch $name (series $series_file) does not apply to $(basename "$sources_jar"):" >&2
    echo "$out" | sed 's/^/    /' >&2
    echo "Rebase the series: build/series-to-worktree.sh, fix, build/worktree-to-series.sh (README)." >&2
    exit 1
  fi
  case $name in
    ../shared/*) echo "applied $name (one file, shared with: $(grep -l -x -F "$name" "$series_dir"/../*/series \
                   | sed 's#.*/\([^/]*\)/series$#\1#' | grep -vx "$(basename "$series_dir")" | paste -sd, -))" ;;
    *) echo "applied $name" ;;
  esac
  grep -E '^\+\+\+ ' "$file" | sed -E 's#^\+\+\+ [^/]+/##; s#[[:space:]].*$##' >> "$touched"
done

: > "$target/replaced-classes.txt"
sort -u "$touched" | while IFS= read -r rel; do
  [ -n "$rel" ] || continue
  if [ -f "$work/$rel" ]; then
    mkdir -p "$patched/$(dirname "$rel")"
    cp "$work/$rel" "$patched/$rel"
  fi
  stem=${rel%.java}
  printf '%s.class\n%s$*.class\n' "$stem" "$stem" >> "$target/replaced-classes.txt"
done

# A patch shared by several lines is listed as shared/NAME (its series names it ../shared/NAME).
list=$(IFS=,; echo "${names[*]+"${names[*]}"}" | sed 's#\.\./shared/#shared/#g')
if [ ${#names[@]} -gt 0 ]; then
  sum=$(cd "$series_dir" && cat "${names[@]}" | sha256sum | cut -d' ' -f1)
else
  sum=none
fi
printf 'patch.series=%s\npatch.series.sha256=%s\n' "${list:-none}" "$sum" > "$target/patch-series.properties"
echo "series $series_dir: ${#names[@]} patch(es); replaced classes:"
sed 's/^/    /' "$target/replaced-classes.txt"

# The backport matrix (docs/patches.md) is generated from the series: a stale one fails the build.
root=$(cd "$(dirname "$0")/.." && pwd)
python3 "$root/build/patch-matrix.py" --check "$root/docs/patches.md"
