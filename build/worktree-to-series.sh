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
# worktree-to-series.sh MODULE LINE
#
# Writes the commits after "upstream" in .worktrees/MODULE-LINE back as MODULE/patches/LINE:
# one NNNN-subject.patch per commit (git format-patch, stable: no hashes, dates or signatures) and
# the series file listing them in order. A commit whose patch the series took from
# MODULE/patches/shared/ (same subject) is written back there, and every other line that lists it is
# checked to still apply: one work tree edits a patch kept once for several lines. The commit message is the patch header: subject, why,
# upstream issue, whether it is meant for upstream.
set -euo pipefail
module=${1:?usage: worktree-to-series.sh MODULE LINE}
line=${2:?usage: worktree-to-series.sh MODULE LINE}
root=$(cd "$(dirname "$0")/.." && pwd)
wt=$root/.worktrees/$module-$line
series_dir=$root/$module/patches/$line
[ -d "$wt/.git" ] || { echo "no work tree $wt (series-to-worktree.sh makes it)" >&2; exit 1; }
if [ -n "$(git -C "$wt" status --porcelain)" ]; then
  echo "$wt has uncommitted changes: commit them first" >&2
  exit 1
fi
# What a patch changes, without where: its header and its hunks, context lines included (the build
# applies a patch with no fuzz, so a changed context line is a change), without hunk offsets, the hunk
# headings' nearest-line text and index lines (they differ from line to line for one change).
change_of() {
  sed -n '/^diff --git /q; p' "$1"
  sed -n '/^diff --git /,$p' "$1" | grep -vE '^(index |diff --git |\+\+\+ |--- )' | sed -E 's/^@@ .* @@.*/@@/'
}
# A patch's subject: its "Subject:" header with the folded lines joined.
subject_of() {
  awk '/^Subject: /{s=$0; on=1; next} on && /^ /{s=s $0; next} on{exit} END{sub(/^Subject: (\[PATCH[^]]*\] )?/, "", s); print s}' "$1"
}
mkdir -p "$series_dir"
# The patches this line shares with others (../shared/NAME in its series), by subject: an edited one
# is written back to its shared file, once for every line that lists it.
declare -A shared_by_subject=()
if [ -f "$series_dir/series" ]; then
  while IFS= read -r name || [ -n "$name" ]; do
    name=$(echo "${name%%#*}" | tr -d '[:space:]')
    case $name in
      ../shared/*) shared_by_subject["$(subject_of "$series_dir/$name")"]=$name ;;
    esac
  done < "$series_dir/series"
fi
exported=$(mktemp -d)
trap 'rm -rf "$exported"' EXIT
git -C "$wt" format-patch -q --no-signature --zero-commit --no-stat --full-index \
  --no-numbered -o "$exported" upstream..HEAD
# Drop the Date line so that an unchanged commit exports to an unchanged file.
sed -i '/^Date: /d' "$exported"/*.patch 2>/dev/null || true
rm -f "$series_dir"/*.patch
entries=()
changed_shared=()
for f in "$exported"/*.patch; do
  [ -e "$f" ] || continue
  shared=${shared_by_subject["$(subject_of "$f")"]:-}
  if [ -n "$shared" ]; then
    # Rewritten only when the change itself changed: the file stays the one it was for every line.
    if [ "$(change_of "$f")" != "$(change_of "$series_dir/$shared")" ]; then
      cp "$f" "$series_dir/$shared"
      changed_shared+=("$shared")
    fi
    entries+=("$shared")
  else
    cp "$f" "$series_dir/"
    entries+=("$(basename "$f")")
  fi
done
{
  echo "# Patch series for $module $line, applied in order by build/apply-series.sh."
  echo "# ../shared/NAME: one file shared with the other lines whose series list it."
  printf '%s\n' "${entries[@]+"${entries[@]}"}"
} > "$series_dir/series"
echo "$series_dir: ${#entries[@]} patch(es), ${#changed_shared[@]} shared one(s) changed"
# The backport matrix follows the series.
python3 "$root/build/patch-matrix.py" > "$root/docs/patches.md"
# An edited shared patch must still apply to every other line that lists it.
artifact=$(sed -n 's#.*<upstream.artifactId>\(.*\)</upstream.artifactId>.*#\1#p' "$root/$module/pom.xml")
status=0
for shared in "${changed_shared[@]+"${changed_shared[@]}"}"; do
  for other_series in "$root/$module"/patches/*/series; do
    other=$(basename "$(dirname "$other_series")")
    [ "$other" != "$line" ] && grep -qxF "$shared" "$other_series" || continue
    jar=${MAVEN_REPO:-$HOME/.m2/repository}/org/apache/pulsar/$artifact/$other/$artifact-$other-sources.jar
    check=$(mktemp -d)
    if bash "$root/build/apply-series.sh" "$jar" "$(dirname "$other_series")" "$check" > "$check.log" 2>&1; then
      echo "  $shared still applies to $other"
    else
      echo "ERROR: $shared, edited on $line, no longer applies to $other:" >&2
      grep -A8 'ERROR' "$check.log" | sed 's/^/    /' >&2
      echo "  Give $other its own copy (copy the file into $module/patches/$other/ and name it in its series)," >&2
      echo "  or make the change apply to both." >&2
      status=1
    fi
    rm -rf "$check" "$check.log"
  done
done
exit $status
