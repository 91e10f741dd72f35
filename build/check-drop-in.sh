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
# check-drop-in.sh TARGET_DIR DROP_IN_JAR [JAVA RELEASE]
#
# A drop-in jar must hold every upstream entry, except that the classes of a patched file (outer,
# nested, anonymous) come only from our compile output: a stale upstream Outer$7.class left beside
# our recompiled Outer would be loaded by nobody but would hide a numbering shift.
# Then every class of ours in it must be used (check-no-dead-classes.sh), and its classes must be at
# the upstream jar's bytecode level (check-bytecode-level.sh, run with
# the java launcher JAVA; RELEASE is the release the module compiled at).
set -euo pipefail
target=$1
jar=$2
java=${3:-java}
release=${4:-}
upstream=$target/upstream/upstream.jar
classes=$target/classes

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unzip -Z1 "$upstream" | grep -v '/$' | sort > "$tmp/upstream"
unzip -Z1 "$jar" | grep -v '/$' | sort > "$tmp/ours"
mkdir -p "$classes"
(cd "$classes" && find . -type f | sed 's#^\./##' | sort) > "$tmp/compiled"

# Ant patterns (X.class, X$*.class) to an anchored regular expression.
sed -e 's/[.]/\\./g' -e 's/\$/\\$/g' -e 's/\*/[^\/]*/g' -e 's/^/^/' -e 's/$/$/' \
  "$target/replaced-classes.txt" > "$tmp/replaced.re"
if [ -s "$tmp/replaced.re" ]; then
  grep -v -f "$tmp/replaced.re" "$tmp/upstream" > "$tmp/kept" || true
  grep -f "$tmp/replaced.re" "$tmp/ours" > "$tmp/ours-replaced" || true
else
  cp "$tmp/upstream" "$tmp/kept"
  : > "$tmp/ours-replaced"
fi
grep -vx 'META-INF/MANIFEST.MF' "$tmp/kept" > "$tmp/kept2" || true

missing=$(comm -23 "$tmp/kept2" "$tmp/ours")
if [ -n "$missing" ]; then
  echo "ERROR: $jar lacks upstream entries:" >&2
  echo "$missing" | head -20 | sed 's/^/    /' >&2
  exit 1
fi
stale=$(comm -23 "$tmp/ours-replaced" "$tmp/compiled")
if [ -n "$stale" ]; then
  echo "ERROR: $jar holds classes of a patched file that we did not compile (stale upstream):" >&2
  echo "$stale" | sed 's/^/    /' >&2
  exit 1
fi
if [ -s "$tmp/ours-replaced" ] && [ ! -s "$tmp/compiled" ]; then
  echo "ERROR: the series replaces classes but nothing was compiled" >&2
  exit 1
fi
echo "drop-in check: $(basename "$jar"): $(wc -l < "$tmp/ours") entries;" \
  "$(wc -l < "$tmp/kept2") upstream entries kept, $(wc -l < "$tmp/ours-replaced") replaced by ours," \
  "$(comm -13 "$tmp/upstream" "$tmp/ours" | grep -c . || true) added"
bash "$(dirname "$0")/check-no-dead-classes.sh" "$target"
bash "$(dirname "$0")/check-bytecode-level.sh" "$target" "$jar" "$java" "$release"
