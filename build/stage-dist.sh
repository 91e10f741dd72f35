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
# build/stage-dist.sh LINE DEST
#
# Copies the drop-in jars of LINE, just built in the module targets, into DEST with SHA256SUMS, and the
# SHA-256 of the upstream jar each replaces (the one the build checked it against) into
# UPSTREAM-SHA256SUMS, under the file name in a broker's lib/. bin/drop-in reads both.
set -euo pipefail
cd "$(dirname "$0")/.."
line=$1
dest=$2
mkdir -p "$dest"
: > "$dest/UPSTREAM-SHA256SUMS.tmp"
for m in managed-ledger pulsar-client-patch pulsar-broker-patch; do
  jar=$(ls "$m"/target/org.apache.pulsar-*-"$line".jar)
  name=${jar##*/}
  upstream=$m/target/upstream/upstream.jar
  built=$(unzip -p "$upstream" META-INF/MANIFEST.MF | tr -d '\r' | sed -n 's/^Implementation-Version: //p')
  if [ "$built" != "$line" ]; then
    echo "stage-dist: $upstream is upstream $built, not $line: build $m for $line first" >&2
    exit 1
  fi
  cp "$jar" "$dest/$name"
  echo "$(sha256sum "$upstream" | cut -d' ' -f1)  $name" >> "$dest/UPSTREAM-SHA256SUMS.tmp"
done
mv "$dest/UPSTREAM-SHA256SUMS.tmp" "$dest/UPSTREAM-SHA256SUMS"
(cd "$dest" && sha256sum org.apache.pulsar-*-"$line".jar > SHA256SUMS)
