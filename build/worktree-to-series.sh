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
# the series file listing them in order. The commit message is the patch header: subject, why,
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
mkdir -p "$series_dir"
rm -f "$series_dir"/*.patch
git -C "$wt" format-patch -q --no-signature --zero-commit --no-stat --full-index \
  --no-numbered -o "$series_dir" upstream..HEAD
# Drop the Date line so that an unchanged commit exports to an unchanged file.
sed -i '/^Date: /d' "$series_dir"/*.patch 2>/dev/null || true
{
  echo "# Patch series for $module $line, applied in order by build/apply-series.sh."
  (cd "$series_dir" && ls -1 [0-9][0-9][0-9][0-9]-*.patch 2>/dev/null || true)
} > "$series_dir/series"
echo "$series_dir: $(grep -vc '^#' "$series_dir/series" || true) patch(es)"
# The backport matrix follows the series.
python3 "$root/build/patch-matrix.py" > "$root/docs/patches.md"
