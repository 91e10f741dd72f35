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
# check-no-dead-classes.sh TARGET_DIR
#
# Every class of ours compiled into a drop-in jar (the module's src/main/java*, not the patched upstream
# files) must be used by this line's patched upstream sources (TARGET_DIR/patched-src), directly or
# through another class of ours that is: a class no patched file reaches is dead code in the jar.
set -euo pipefail
target=$1
module=$(dirname "$target")
patched=$target/patched-src
[ -d "$patched" ] || { echo "no patched sources in $patched" >&2; exit 1; }
declare -A source_of=()
for dir in "$module"/src/main/java*; do
  [ -d "$dir" ] || continue
  while IFS= read -r file; do
    rel=${file#"$dir"/}
    # Only the source sets this line compiled.
    [ -f "$target/classes/${rel%.java}.class" ] || continue
    source_of[$(basename "$file" .java)]=$file
  done < <(find "$dir" -name '*.java')
done
declare -A used=()
for name in "${!source_of[@]}"; do
  if grep -rqw --include='*.java' "$name" "$patched"; then
    used[$name]=1
  fi
done
changed=1
while [ $changed -eq 1 ]; do
  changed=0
  for name in "${!source_of[@]}"; do
    [ -z "${used[$name]:-}" ] || continue
    for user in "${!used[@]}"; do
      if grep -qw "$name" "${source_of[$user]}"; then
        used[$name]=1
        changed=1
        break
      fi
    done
  done
done
dead=()
for name in "${!source_of[@]}"; do
  [ -n "${used[$name]:-}" ] || dead+=("${source_of[$name]#"$module"/}")
done
if [ ${#dead[@]} -gt 0 ]; then
  echo "ERROR: classes of ours that no patched file of this line uses (dead code in the jar):" >&2
  printf '    %s\n' "${dead[@]}" >&2
  exit 1
fi
echo "dead-class check: ${#source_of[@]} class(es) of ours, each used by this line's patched sources"
