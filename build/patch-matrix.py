#!/usr/bin/env python3
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
# build/patch-matrix.py [--check FILE]
#
# The backport matrix: every patch of every series (module x upstream line), grouped by its subject,
# with its upstream issue and intent (from the patch header), the lines it is on, the files it
# touches, and whether its change is the same on every line (its added and removed lines compared,
# hunk offsets ignored). Prints docs/patches.md; with --check, fails if FILE differs from it.
import configparser
import difflib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ["managed-ledger", "pulsar-client-patch", "pulsar-broker-patch"]
LINES = ["4.0.8", "4.2.4", "5.0.0-M1"]


def series(module, line):
    folder = os.path.join(ROOT, module, "patches", line)
    path = os.path.join(folder, "series")
    if not os.path.exists(path):
        return []
    names = []
    for raw in open(path):
        name = raw.split("#", 1)[0].strip()
        if name:
            names.append(os.path.normpath(os.path.join(folder, name)))
    return names


def parse(path):
    text = open(path, encoding="utf-8").read()
    header, _, body = text.partition("\ndiff --git ")
    subject = ""
    fields = {}
    current = None
    in_subject = False
    for row in header.split("\n"):
        if row.startswith("Subject: "):
            subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", row[len("Subject: "):])
            in_subject = True
            continue
        if in_subject:
            if row.startswith(" "):
                subject += " " + row.strip()
                continue
            in_subject = False
        match = re.match(r"^(What|Why|Upstream issue|Upstream intent): ?(.*)$", row)
        if match:
            current = match.group(1)
            fields[current] = match.group(2).strip()
        elif current and row.strip() and not row.startswith("---"):
            fields[current] += " " + row.strip()
        elif not row.strip():
            current = None
    files = sorted(set(re.findall(r"^\+\+\+ b/(\S+)", "diff --git " + body, re.M)))
    change = [row for row in ("diff --git " + body).split("\n")
              if (row.startswith("+") or row.startswith("-")) and not row.startswith(("+++", "---"))]
    return {"subject": subject, "fields": fields, "files": files, "change": change, "path": path}


def exported_prs():
    """(module, 5.0.0-M1 patch number) -> the upstream PR of upstream-pr/prs.conf it is exported in."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.path.join(ROOT, "upstream-pr", "prs.conf"))
    where = {}
    for name in parser.sections():
        for ref in parser[name].get("patches", "").split():
            module, number = ref.split("/")
            where[(module, int(number))] = name
    return where


def upstream_idioms():
    """Where an exported PR's code differs from the drop-in patch: its upstream-idioms diffs, with their headers."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.path.join(ROOT, "upstream-pr", "prs.conf"))
    rows = []
    for name in parser.sections():
        main_only = parser[name].get("upstream-idioms-main-only", "").split()
        for entry in parser[name].get("upstream-idioms", "").split():
            ref, _, diff = entry.partition(":")
            text = open(os.path.join(ROOT, "upstream-pr", name, diff), encoding="utf-8").read()
            if "diff --git " not in text:
                raise SystemExit("upstream-pr/%s/%s holds no diff" % (name, diff))
            header = " ".join(text[:text.index("diff --git ")].split())
            what = re.search(r"What: (.*?)(?= Why[^:]*:| Commit note:| Folded into:|$)", header)
            why = re.search(r"Why[^:]*: (.*?)(?= Commit note:| Folded into:|$)", header)
            rows.append("| `%s` | %s | %s | `%s` | %s | %s |" % (
                name, ref, "5.0.0-M1" if diff in main_only else "5.0.0-M1, 4.2.4, 4.0.8", diff,
                (what.group(1) if what else "**missing**").replace("|", "\\|"),
                (why.group(1) if why else "**missing**").replace("|", "\\|")))
    if not rows:
        return []
    return ["## Where the exported PRs differ from the drop-in patches", "",
            "The drop-in jars link with upstream's other jars, which they do not replace, and keep one source of a",
            "new class for the three lines; the exported PRs change the whole tree and take upstream's idioms there.",
            "Each difference is a diff under `upstream-pr/<pr>/` (`upstream-idioms` in `prs.conf`; the patch numbers",
            "are 5.0.0-M1's) that the export folds into the commit of the patch named. The drop-in code is built and",
            "tested by the bench (`bin/run-tests`). The exported code is compiled at every commit by the export's",
            "check (5.0.0-M1 in CI; 4.2.4 and 4.0.8 with `--line`), and runs only where the PR's own tests reach it:",
            "the geo-replication PR's tests are the client's, which run the client idiom; its broker idioms are",
            "compiled, not run, there.", "",
            "| upstream PR | folded into | lines | diff | what | why the drop-in differs |",
            "|---|---|---|---|---|---|"] + rows + [""]


def short(path):
    return path.split("/")[-1]


def render():
    out = ["# Patches: the backport matrix", "",
           "Generated by `build/patch-matrix.py` from the patch series and their headers; the build fails",
           "when this file is stale (`build/apply-series.sh` checks it). Regenerate with",
           "`python3 build/patch-matrix.py > docs/patches.md`.", "",
           "Per line: the patch number in that line's series. \"Change\" compares the added and removed lines",
           "of the patch across lines (hunk offsets ignored): *same* means one change applied at different",
           "offsets; otherwise the lines that differ from the first one are named. A patch kept once for several",
           "lines (`MODULE/patches/shared/`, listed in each of their series) says so: \"one file\" and the lines",
           "that apply it. \"Upstream PR\" is the",
           "series `bin/export-upstream-pr` exports it in (`upstream-pr/prs.conf`, rebased on 5.0.0-M1);",
           "a patch in none stays in the fork, for the reason its intent gives.", ""]
    exported = exported_prs()
    for module in MODULES:
        groups = {}
        order = []
        for line in LINES:
            for number, path in enumerate(series(module, line), start=1):
                patch = parse(path)
                key = patch["subject"]
                if key not in groups:
                    groups[key] = {}
                    order.append(key)
                groups[key][line] = (number, patch)
        if not order:
            continue
        out += ["## " + module, "",
                "| patch | " + " | ".join(LINES) + " | upstream issue | upstream intent | upstream PR | files | change |",
                "|---|" + "---|" * len(LINES) + "---|---|---|---|---|"]
        for key in order:
            per_line = groups[key]
            first_line = next(line for line in LINES if line in per_line)
            first = per_line[first_line][1]
            cells = ["%04d" % per_line[line][0] if line in per_line else "-" for line in LINES]
            differs = []
            for line in LINES:
                if line in per_line and line != first_line:
                    other = per_line[line][1]["change"]
                    if other != first["change"]:
                        delta = sum(1 for d in difflib.ndiff(first["change"], other) if d[:1] in "+-")
                        differs.append("%s (%d lines)" % (line, delta))
            change = "same" if not differs else "differs on " + ", ".join(differs)
            shared = {}
            for line in LINES:
                if line in per_line and "/shared/" in per_line[line][1]["path"]:
                    shared.setdefault(per_line[line][1]["path"], []).append(line)
            for path, on in shared.items():
                where = "one file on every line" if len(on) == len(per_line) else "one file on " + ", ".join(on)
                change = "%s: `shared/%s`; %s" % (where, os.path.basename(path), change)
            issue = first["fields"].get("Upstream issue", "**missing**")
            intent = first["fields"].get("Upstream intent", "**missing**")
            files = ", ".join(sorted({short(f) for line in per_line for f in per_line[line][1]["files"]}))
            m1 = per_line.get("5.0.0-M1")
            pr = exported.get((module, m1[0]), "fork only") if m1 else "backport lines only (no 5.0.0-M1 patch of this name: see its issue)"
            row = [key.replace("|", "\\|")] + cells + [issue.replace("|", "\\|"), intent.replace("|", "\\|"),
                                                       "`%s`" % pr if pr in exported.values() else pr, files, change]
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    out += upstream_idioms()
    affected = os.path.join(ROOT, "build", "affected-releases.md")
    if os.path.exists(affected):
        out += ["## Affected releases", "", open(affected, encoding="utf-8").read().rstrip("\n"), ""]
    return "\n".join(out)


def main():
    text = render()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        target = sys.argv[2]
        current = open(target, encoding="utf-8").read() if os.path.exists(target) else ""
        if current.rstrip("\n") != text.rstrip("\n"):
            sys.stderr.write("%s is stale: the patch series changed. Regenerate it with\n"
                             "  python3 build/patch-matrix.py > docs/patches.md\n" % target)
            for row in difflib.unified_diff(current.splitlines(), text.splitlines(), "committed", "generated",
                                            lineterm="", n=0):
                sys.stderr.write(row + "\n")
            sys.exit(1)
        return
    print(text)


if __name__ == "__main__":
    main()
