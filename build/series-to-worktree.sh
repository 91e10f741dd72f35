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
# series-to-worktree.sh MODULE LINE
#
# Turns a patch series into a git work tree you can edit: .worktrees/MODULE-LINE holds the upstream
# -sources jar of that line as the first commit ("upstream"), then one commit per patch of
# MODULE/patches/LINE/series. Edit, commit (or rebase -i), then run worktree-to-series.sh.
set -euo pipefail
module=${1:?usage: series-to-worktree.sh MODULE LINE}
line=${2:?usage: series-to-worktree.sh MODULE LINE}
root=$(cd "$(dirname "$0")/.." && pwd)
series_dir=$root/$module/patches/$line
[ -d "$series_dir" ] || { echo "no series folder $series_dir" >&2; exit 1; }
artifact=$(sed -n 's#.*<upstream.artifactId>\(.*\)</upstream.artifactId>.*#\1#p' "$root/$module/pom.xml")
jar=${MAVEN_REPO:-$HOME/.m2/repository}/org/apache/pulsar/$artifact/$line/$artifact-$line-sources.jar
if [ ! -f "$jar" ]; then
  (cd "$root" && mvn -q dependency:get -Dartifact="org.apache.pulsar:$artifact:$line:jar:sources" -Dtransitive=false)
fi
wt=$root/.worktrees/$module-$line
if [ -e "$wt" ]; then
  echo "$wt exists: export it first (worktree-to-series.sh) or remove it" >&2
  exit 1
fi
mkdir -p "$wt"
cd "$wt"
git init -q
git config user.name "$(git -C "$root" config user.name || echo fork)"
git config user.email "$(git -C "$root" config user.email || echo fork@localhost)"
unzip -q "$jar" -d .
git add -A
git commit -q -m "upstream $artifact $line (sources jar)"
git tag upstream
while IFS= read -r name || [ -n "$name" ]; do
  name=${name%%#*}
  name=$(echo "$name" | tr -d '[:space:]')
  [ -n "$name" ] || continue
  if ! git am -q --keep-cr "$series_dir/$name"; then
    echo "patch $name does not apply; resolve in $wt, then 'git am --continue'" >&2
    exit 1
  fi
done < "$series_dir/series"
echo "$wt: upstream + $(git rev-list --count upstream..HEAD) patch commit(s)"
