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
# check-bench-counts.sh TARGET_DIR UPSTREAM_SUITE_XML LINE
#
# Prints the test counts of every bench run (per run and per class) and fails when a run, or a
# class named in the upstream suite file, ran 0 tests: a missing test dependency makes TestNG skip
# whole classes without a failure.
set -euo pipefail
target=$1
suite=$2
line=$3
status=0
echo "==== bench counts for upstream line $line ($(basename "$(dirname "$target")")) ===="
# A suite of "-": tests-broker, without upstream suites and with the mixed jar set (upstream's broker
# jar on our managed-ledger jar).
runs="ours upstream upstream-suites"
if [ "$suite" = "-" ]; then
  runs="ours upstream mixed"
  # Upstream's broker test classes (lines with a pulsar-broker test-jar); on upstream's jars only in the long run.
  for optional in upstream-broker-suites upstream-broker-suites-upstream; do
    [ ! -d "$target/bench-reports/$optional" ] || runs="$runs $optional"
  done
fi
for run in $runs; do
  dir=$target/bench-reports/$run
  files=$(ls "$dir"/TEST-*.xml 2>/dev/null || true)
  if [ -z "$files" ]; then
    echo "ERROR: run '$run' left no reports in $dir" >&2
    status=1
    continue
  fi
  total=0; failed=0; skipped=0
  for f in $files; do
    t=$(grep -o '<testsuite [^>]*' "$f" | grep -o ' tests="[0-9]*"' | grep -o '[0-9]*')
    fl=$(grep -o '<testsuite [^>]*' "$f" | grep -o ' failures="[0-9]*"' | grep -o '[0-9]*')
    er=$(grep -o '<testsuite [^>]*' "$f" | grep -o ' errors="[0-9]*"' | grep -o '[0-9]*')
    sk=$(grep -o '<testsuite [^>]*' "$f" | grep -o ' skipped="[0-9]*"' | grep -o '[0-9]*')
    total=$((total + t)); failed=$((failed + fl + er)); skipped=$((skipped + sk))
    printf '  %-16s %-70s %4d tests %3d failed %3d skipped\n' "$run" "$(basename "$f" .xml | sed 's/^TEST-//')" "$t" "$((fl + er))" "$sk"
  done
  echo "  $run: $total tests, $failed failed, $skipped skipped"
  if [ "$total" -eq 0 ]; then
    echo "ERROR: run '$run' ran 0 tests" >&2
    status=1
  fi
done
[ "$suite" != "-" ] || exit $status
for cls in $(grep -o '<class name="[^"]*"' "$suite" | sed 's/.*name="//; s/"$//'); do
  n=$(cat "$target"/bench-reports/upstream-suites/TEST-*.xml 2>/dev/null | grep -o "<testcase [^>]*classname=\"$cls\"" | wc -l)
  printf '  %-16s %-70s %4d tests\n' "by class" "$cls" "$n"
  if [ "$n" -eq 0 ]; then
    echo "ERROR: upstream suite $cls ran 0 tests on line $line" >&2
    status=1
  fi
done
exit $status
