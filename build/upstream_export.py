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
# build/upstream_export.py export OUT_DIR [--sources DIR] [--line LINE]
# build/upstream_export.py verify OUT_DIR --classpath CP [--sources DIR] [--line LINE]
# (run by the upstream-pr module of the 5.0.0-M1 build and by bin/export-upstream-pr; DIR holds the
# four -sources jars, default: the local Maven repository). LINE is 5.0.0-M1 (the PRs against master,
# the default) or a backport line, 4.2.4 or 4.0.8: the PRs prs.conf backports there ("backport"), made of
# that line's patches, on its sources and checked against its jars; "5.0.0-M1" below then reads LINE.
#
# export: the upstream pull requests of upstream-pr/prs.conf as git format-patch series in
# apache/pulsar's repository layout. An upstream-shaped git tree is built from the 5.0.0-M1
# -sources jars of managed-ledger, pulsar-broker, pulsar-broker-common and pulsar-client-original
# (committed at managed-ledger/src/main/java, pulsar-broker/src/main/java, ...); each PR is a branch
# (stacked on the PR it names), made of our 5.0.0-M1 patches with their paths moved into that layout,
# our new classes in the commit of the PR's first patch of their module that needs them, the PR's
# upstream-idiom diffs folded into the commits they name, and one commit with the PR's tests. Writes
# OUT_DIR/<pr>/NNNN-*.patch and OUT_DIR/<pr>/description.md.
# The author of every commit is the one `git config` gives (user.name, user.email).
#
# verify: builds the same upstream tree again, applies every exported series with `git am -3`,
# compiles every commit of each PR on its own (the main files it changes and their dependents), then,
# at the PR's tip, the main files the PR's tree changes (with their subclasses and the users in their
# packages) and every test file against the upstream 5.0.0-M1 jars (CP: their dependencies and the test
# bases: managed-ledger's MockedBookKeeperTestCase from the 4.2.4 test-jar, as 5.0.0-M1 publishes none),
# and runs the tests with TestNG (plain, without upstream's build listeners): every reproducer must fail on
# an assertion on the tree the PR is based on, and every test of the PR and of the PRs below it must pass
# on the PR's tree. Prints the result per PR, writes it into each description, and exits non-zero when
# one differs.
import argparse
import configparser
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The line the PRs are exported for: 5.0.0-M1 (master's), or a backport line (--line 4.2.4, --line 4.0.8).
MAIN_LINE = "5.0.0-M1"
LINE = MAIN_LINE
CONF = os.path.join(ROOT, "upstream-pr", "prs.conf")
M2 = os.path.expanduser(os.environ.get("M2_REPO", "~/.m2/repository"))
SOURCES_DIR = None
# Our module -> (upstream module folder, upstream artifact whose -sources jar it patches).
MODULES = {
    "managed-ledger": ("managed-ledger", "managed-ledger"),
    "pulsar-client-patch": ("pulsar-client", "pulsar-client-original"),
    "pulsar-broker-patch": ("pulsar-broker", "pulsar-broker"),
    # No patch of ours: in the tree for the upstream idioms that change it (ServiceConfiguration).
    "pulsar-broker-common": ("pulsar-broker-common", "pulsar-broker-common"),
}
BASE_AUTHOR = "Apache Pulsar %s sources <dev@pulsar.apache.org>"
BASE_DATE = "2026-01-01T00:00:00+00:00"


def run(cmd, cwd=None, env=None, check=True):
    result = subprocess.run(cmd, cwd=cwd, env=env, text=True, capture_output=True)
    if check and result.returncode != 0:
        sys.stderr.write("ERROR: %s (in %s) exited %d\n%s%s" % (
            " ".join(cmd), cwd, result.returncode, result.stdout, result.stderr))
        sys.exit(1)
    return result


def fail(message):
    sys.stderr.write("ERROR: " + message + "\n")
    sys.exit(1)


class PullRequest:
    def __init__(self, name, section):
        self.name = name
        self.title = section["title"]
        self.stacked_on = section.get("stacked-on", "").strip() or None
        # patches name 5.0.0-M1's series; a backport line takes its own list (patches-4.0.8, or patches-4.x for
        # both 4.x lines) or, without one, the patches of the same names in its series.
        own = section.get("patches-" + LINE) or (section.get("patches-4.x") if LINE.startswith("4.") else None)
        if LINE == MAIN_LINE:
            self.patches = section.get("patches", "").split()
        elif own:
            self.patches = own.split()
        else:
            self.patches = [same_patch_on_line(ref) for ref in section.get("patches", "").split()]
        self.new_classes = (section.get("new-classes-" + LINE) or (section.get("new-classes-4.x") if LINE.startswith(
            "4.") else None) or section.get("new-classes", "")).split()
        # A test is a file under upstream-pr/<pr>/ at its upstream path, or UPSTREAM_PATH=FORK_PATH: one of the
        # fork's own tests (FORK_PATH from the repository's root), exported with upstream's test group.
        self.fork_sources = {}
        self.reproducers = self.test_paths(section.get("reproducers", ""))
        self.tests = self.test_paths(section.get("tests", ""))
        self.unverified = self.test_paths(section.get("unverified-tests", ""))
        # Test bases and helpers of the PR's tests: compiled with them, not run.
        self.support = self.test_paths(section.get("test-support", ""))
        self.pip = section.get("pip", "").strip() or None
        # One commit for the PR's patches: the changes share new classes whose intermediate versions a
        # commit per patch would need, and do not exist apart.
        self.squash = section.getboolean("squash", fallback=False)
        # Changes to upstream tests that the checked tree does not hold (no test sources are published):
        # diffs under upstream-pr/<pr>/, copied next to the series.
        self.test_changes = section.get("test-changes", "").split()
        # Changes to files outside the modules' sources (conf/broker.conf), likewise copied next to the series.
        self.conf_changes = section.get("conf-changes", "").split()
        # Where the PR's code takes upstream's idioms that the drop-in jars do not (they link with upstream's other
        # jars, and keep one source of a class for three lines): PATCH:DIFF, a diff under upstream-pr/<pr>/ in the
        # upstream layout, folded into the commit of that patch (a 5.0.0-M1 patch number; on a backport line, its
        # patch of the same name), except the diffs listed in upstream-idioms-main-only on the backports.
        self.idioms = self.idiom_diffs(section)
        # What a backport changes or adds against the PR on master, for its description.
        self.backport_differences = (section.get("backport-differences-" + LINE) or (
            section.get("backport-differences-4.x") if LINE.startswith("4.") else None) or "").strip()

    def idiom_diffs(self, section):
        main_only = section.get("upstream-idioms-main-only", "").split()
        diffs = {}
        for entry in section.get("upstream-idioms", "").split():
            ref, _, diff = entry.partition(":")
            if not diff:
                fail("%s: upstream-idioms entry %s of %s is not PATCH:DIFF" % (CONF, entry, self.name))
            if LINE != MAIN_LINE:
                if diff in main_only:
                    continue
                ref = same_patch_on_line(ref)
            if ref not in self.patches:
                fail("%s: upstream-idioms of %s names %s for %s, which is not one of its patches on %s" % (
                    CONF, self.name, ref, diff, LINE))
            diffs.setdefault(ref, []).append(diff)
        unknown = set(main_only) - {e.partition(":")[2] for e in section.get("upstream-idioms", "").split()}
        if unknown:
            fail("%s: upstream-idioms-main-only of %s names %s, not in its upstream-idioms" % (
                CONF, self.name, ", ".join(sorted(unknown))))
        return diffs

    def test_paths(self, entries):
        paths = []
        for entry in entries.split():
            path, _, fork_path = entry.partition("=")
            if fork_path:
                self.fork_sources[path] = fork_path
            paths.append(path)
        return paths

    def test_source(self, rel):
        fork_path = self.fork_sources.get(rel)
        return os.path.join(ROOT, fork_path) if fork_path else os.path.join(self.folder(), rel)

    def folder(self):
        return os.path.join(ROOT, "upstream-pr", self.name)

    def all_tests(self):
        return self.support + self.reproducers + self.tests + self.unverified


def load_prs():
    parser = configparser.ConfigParser(interpolation=None)
    with open(CONF) as f:
        parser.read_file(f)
    names = [name for name in parser.sections()
             if LINE == MAIN_LINE or LINE in parser[name].get("backport", "").split()]
    if not names:
        fail("%s: no PR has a backport to %s" % (CONF, LINE))
    prs = [PullRequest(name, parser[name]) for name in names]
    names = set()
    for pr in prs:
        if pr.stacked_on and pr.stacked_on not in names:
            fail("%s: stacked-on %s must be a PR listed before it in %s (on %s: with a backport there)" % (
                pr.name, pr.stacked_on, CONF, LINE))
        names.add(pr.name)
    return prs


def series(module, line):
    with open(os.path.join(ROOT, module, "patches", line, "series")) as f:
        return [row.split("#", 1)[0].strip() for row in f if row.split("#", 1)[0].strip()]


def patch_file(ref, line=None):
    """managed-ledger/0001 -> the first patch of that module's series on the line (its own, or a shared one)."""
    line = line or LINE
    module, number = ref.split("/")
    names = series(module, line)
    if not number.isdigit() or not 1 <= int(number) <= len(names):
        fail("%s: %s names no patch of %s/patches/%s/series (%d patches)" % (CONF, ref, module, line, len(names)))
    return module, os.path.normpath(os.path.join(ROOT, module, "patches", line, names[int(number) - 1]))


def patch_name(path):
    """0005-Cursor-reset-....patch and ../shared/Cursor-reset-....patch -> Cursor-reset-...: one change's name
    across the lines' series."""
    return re.sub(r"^\d{4}-", "", os.path.basename(path))[:-len(".patch")]


def same_patch_on_line(ref):
    """A 5.0.0-M1 patch reference -> the reference of the patch of the same name in LINE's series."""
    module, path = patch_file(ref, MAIN_LINE)
    names = [patch_name(entry) for entry in series(module, LINE)]
    if patch_name(path) not in names:
        fail("%s: %s (%s) has no patch of that name in %s/patches/%s/series: give the PR a patches-%s list" % (
            CONF, ref, patch_name(path), module, LINE, LINE))
    return "%s/%04d" % (module, names.index(patch_name(path)) + 1)


def author():
    name = run(["git", "config", "user.name"], cwd=ROOT, check=False).stdout.strip()
    email = run(["git", "config", "user.email"], cwd=ROOT, check=False).stdout.strip()
    if not name or not email:
        fail("git config user.name and user.email must be set: they are the author of the exported commits")
    if re.search(r"(\.example|example\.(com|org))$", email) or "noreply" in email:
        sys.stderr.write("WARNING: the exported commits' author is %s <%s>, which looks like a placeholder: set "
                         "git config user.name and user.email to yours before sending them upstream\n"
                         % (name, email))
    return name, email


def git_env(name, email):
    """The environment of the temporary repositories: the author, and none of the user's or the system's
    git configuration (signing, hooks, format.* options would change what is exported)."""
    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name,
               GIT_COMMITTER_EMAIL=email, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return env


def build_upstream_tree(work):
    """A git repository holding the line's sources of the modules at their upstream paths."""
    os.makedirs(work)
    for folder, artifact in MODULES.values():
        name = "%s-%s-sources.jar" % (artifact, LINE)
        jar = os.path.join(SOURCES_DIR or os.path.join(M2, "org/apache/pulsar", artifact, LINE), name)
        if not os.path.exists(jar):
            fail("%s is missing (bin/export-upstream-pr resolves it with Maven)" % jar)
        with zipfile.ZipFile(jar) as z:
            for member in z.namelist():
                if member.endswith(".java"):
                    target = os.path.join(work, folder, "src/main/java", member)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, "wb") as out:
                        out.write(z.read(member))
    # Upstream's lombok.config is not in any -sources jar; 5.0.0-M1's classes show what its @CustomLog
    # declares (a static io.github.merlimat.slog.Logger from Logger.get(Class)); 4.x uses none.
    with open(os.path.join(work, "lombok.config"), "w") as f:
        f.write("config.stopBubbling = true\n"
                "lombok.log.custom.declaration = io.github.merlimat.slog.Logger "
                "io.github.merlimat.slog.Logger.get(TYPE)\n")
    name, email = (BASE_AUTHOR % LINE).split(" <")
    env = git_env(name, email[:-1])
    env.update(GIT_AUTHOR_DATE=BASE_DATE, GIT_COMMITTER_DATE=BASE_DATE)
    run(["git", "init", "-q", "-b", "upstream"], cwd=work)
    run(["git", "config", "core.autocrlf", "false"], cwd=work)
    run(["git", "add", "-A"], cwd=work)
    run(["git", "commit", "-q", "-m", "Apache Pulsar %s sources of managed-ledger, pulsar-broker, "
         "pulsar-broker-common and pulsar-client-original (their -sources jars)" % LINE], cwd=work, env=env)
    run(["git", "tag", "upstream-" + LINE], cwd=work)


def upstream_layout(patch_text, module):
    """Moves a patch rooted at the -sources jar into the upstream repository layout."""
    prefix = MODULES[module][0] + "/src/main/java/"
    text = re.sub(r"^(diff --git) a/(\S+) b/(\S+)$",
                  lambda m: "%s a/%s%s b/%s%s" % (m.group(1), prefix, m.group(2), prefix, m.group(3)),
                  patch_text, flags=re.M)
    text = re.sub(r"^(---|\+\+\+) ([ab])/", lambda m: "%s %s/%s" % (m.group(1), m.group(2), prefix),
                  text, flags=re.M)
    return text


def new_class_source(ref):
    """MODULE/PATH: our class as it is; MODULE/PATH@COMMIT: as it was at that commit of this repository
    (a PR stacked below a later one gets the class the way its own patches call it)."""
    ref, _, commit = ref.partition("@")
    module, rel = ref.split("/", 1)
    path = os.path.join(module, "src/main/java", rel)
    # A class only one family of lines ships lives in the module's src/main/java-5.x or java-4.x.
    line_only = os.path.join(module, "src/main/java-%s" % ("5.x" if LINE.startswith("5.") else "4.x"), rel)
    if not commit and not os.path.exists(os.path.join(ROOT, path)) and os.path.exists(os.path.join(ROOT, line_only)):
        path = line_only
    if commit:
        result = run(["git", "show", "%s:%s" % (commit, path)], cwd=ROOT, check=False)
        if result.returncode != 0:
            fail("%s: %s@%s is not in this repository's history (a shallow clone?): %s" % (
                CONF, path, commit, result.stderr.strip()))
        return module, rel, result.stdout
    if not os.path.exists(os.path.join(ROOT, path)):
        fail("%s lists new class %s, which does not exist" % (CONF, path))
    with open(os.path.join(ROOT, path)) as f:
        return module, rel, f.read()


# Patch headers speak of the fork in places; upstream reads these words instead.
REWORDS = [
    (" (ours)", ""),
    ("(our managed-ledger's accepted-not-durable signal)",
     "(the accepted-not-durable signal of the managed-ledger change of this PR)"),
    ("with our managed-ledger", "with the managed-ledger change of this PR"),
    ("With our managed-ledger", "With the managed-ledger change of this PR"),
    ("through our AppliedMarkDelete", "through AppliedMarkDelete (new class)"),
    ("or our client's unconfirmed", "or the client's unconfirmed"),
    ("(regression of this fork's barrier; upstream is not affected)",
     "(a regression the reset barrier of the PR below would bring; upstream is not affected)"),
    ("comes with the fork's typed queue", "comes with the typed queue of the reset-barrier PR"),
    ("which this fork does not patch", "which this change does not touch"),
    ("Found by the schedule explorer", "Found by a randomized exploration of the cursor's schedules"),
    ("found by the schedule explorer", "found by a randomized exploration of the cursor's schedules"),
    ("by the schedule explorer", "by a randomized exploration of the cursor's schedules"),
    ("4.0.8 seed 1949", "on 4.0.8"),
    ("4.0.8 seed 247, once in a clean-clone CI run", "once, on 4.0.8"),
    ("in one benchmark fork of", "in one microbenchmark run of"),
    # The drop-in reads the setting from the configuration's properties; the PR adds a ServiceConfiguration field.
    ("The broker.conf line replicatorPublishFenceEnabled=false turns it off (upstream's behaviour).",
     "The new ServiceConfiguration field replicatorPublishFenceEnabled (default true, documented in conf/broker.conf)"
     " turns it off: false stores the later messages, as before this change."),
]
# Words that only make sense inside the fork: a header or added code line that still has one fails the export.
FORK_WORDS = re.compile(r"\bissue \d+\b|\bours\b|\bour\b|\bfork\b|fork's|pulsarfork|schedule explorer|\bseed \d+"
                        r"|docs/|\bbench\b", re.I)


# The code's comments and messages point the fork's operators at its docs in places; upstream has none.
CODE_REWORDS = [
    (" -n 1 (docs/geo-replication.md, 'Releasing a held entry')\"", " -n 1\""),
]


def upstream_code(text, what, diff=True):
    """Code for upstream: the fork's issue numbers ("(issue 11)") are dropped from every line of a patch
    (context lines too, so that the series still applies) and from the new classes."""
    for fork_words, upstream_words in CODE_REWORDS:
        text = text.replace(fork_words, upstream_words)
    text = re.sub(r" \(issue \d+(, (finding|test) \d+)?\)", "", text, flags=re.I)
    # In a patch only its added lines are checked: the rest is upstream's or was checked before.
    left = [line for line in text.splitlines()
            if not (diff and line.startswith(("-", " "))) and FORK_WORDS.search(line)]
    if left:
        fail("%s speaks of the fork where it goes upstream (reword it in the source):\n    %s" % (
            what, "\n    ".join(left)))
    return text


# The test group upstream's build runs a module's tests in (its surefire configuration selects by group).
TEST_GROUPS = {"pulsar-broker": "broker", "pulsar-client": "broker-impl"}


def upstream_test_groups(text, rel):
    """One of the fork's tests as upstream's: the side-by-side bench's groups become the module's test group."""
    group = TEST_GROUPS.get(rel.split("/")[0])
    if group is None:
        fail("%s: no upstream test group known for %s (TEST_GROUPS)" % (CONF, rel))
    text = re.sub(r"^import static org\.pulsarfork\.bench\.BenchGroups\.\w+;\n", "", text, flags=re.M)
    text = re.sub(r"groups = (?:BenchGroups\.)?(?:FORK_ONLY|UPSTREAM_BUG)\b", 'groups = "%s"' % group, text)
    # Upstream's CI runs a module's tests by group: a test without one would never run there.
    text = re.sub(r"@Test\((?![^)]*\bgroups\b)", '@Test(groups = "%s", ' % group, text)
    return re.sub(r"@Test\b(?!\()", '@Test(groups = "%s")' % group, text)


SCOPES = {"managed-ledger": "ml", "pulsar-broker-patch": "broker", "pulsar-client-patch": "client"}


def title_tag(pr_title):
    """[fix][ml] Some title -> ("[fix][ml]", "fix", "Some title")."""
    m = re.match(r"^((?:\[([a-z]+)\])(?:\[[a-z]+\])*) (.*)$", pr_title)
    if not m:
        fail("%s: PR title %r does not start with upstream's [type][scope] tags" % (CONF, pr_title))
    return m.group(1), m.group(2), m.group(3)


def upstream_message(message, pr_title, module):
    """A patch header rewritten for upstream: upstream's [type][scope] tag on the subject (the one its
    "Upstream intent" names, or the PR's type and the patch's module), and none of the fork's own fields
    (its "Upstream intent" says what the patch is meant to become upstream; trailers after it are kept)."""
    head, _, intent = message.partition("\nUpstream intent:")
    trailers = [line for line in intent.splitlines() if re.match(r"^[A-Z][A-Za-z-]+: \S", line)
                and not line.startswith("For upstream:")]
    message = head.rstrip() + "\n" + ("\n" + "\n".join(trailers) + "\n" if trailers else "")
    for fork_words, upstream_words in REWORDS:
        # The header is wrapped: a phrase may span a line break.
        pattern = r"\s+".join(re.escape(word) for word in fork_words.split(" "))
        message = re.sub(pattern, lambda m: upstream_words, message)
    # The fork's own issue numbers mean nothing upstream: "(issue 11)", "(issue 13, finding 4: x)", ", issue 11:".
    message = re.sub(r"\s*\(issue \d+(, (finding|test) \d+)?\)", "", message, flags=re.I)
    message = re.sub(r"\(issue \d+(, (finding|test) \d+)?[:,]\s*", "(", message, flags=re.I)
    message = re.sub(r"[,:] issue \d+\)", ")", message, flags=re.I)
    message = re.sub(r", issue \d+(, (finding|test) \d+)?:(\s)", r":\3", message, flags=re.I)
    message = re.sub(r"^Upstream issue: ", "Issue: ", message, flags=re.M)
    left = [line for line in message.splitlines() if FORK_WORDS.search(line)]
    if left:
        fail("a patch header speaks of the fork where it goes upstream (reword it in the source or in REWORDS "
             "of build/upstream_export.py):\n    " + "\n    ".join(left))
    own = re.match(r"^\s*((?:\[[a-z]+\])+) ", intent)
    _, kind, _ = title_tag(pr_title)
    tag = own.group(1) if own else "[%s][%s]" % (kind, SCOPES[module])
    if not message.startswith("["):
        message = tag + " " + message
    return message


def commit_pr(work, pr, env, scratch):
    base = pr.stacked_on or "upstream"
    run(["git", "checkout", "-q", "-b", pr.name, base], cwd=work)
    classes_at = classes_by_patch(pr)
    for ref in pr.patches:
        module, path = patch_file(ref)
        with open(path) as f:
            text = f.read()
        header, marker, body = text.partition("\ndiff --git ")
        moved = upstream_layout(header + marker + upstream_code(body, ref), module)
        moved_path = os.path.join(scratch, os.path.basename(path))
        with open(moved_path, "w") as f:
            f.write(moved)
        # No 3-way merge: the series must apply as the fork's build applies it (patch(1), no fuzz).
        result = run(["git", "am", "-q", moved_path], cwd=work, env=env, check=False)
        if result.returncode != 0:
            fail("%s: %s does not apply to the upstream %s tree:\n%s%s" % (
                pr.name, ref, LINE, result.stdout, result.stderr))
        for rel, content in classes_at.get(ref, []):
            target = os.path.join(work, MODULES[module][0], "src/main/java", rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w") as f:
                f.write(upstream_code(content, rel, diff=False))
            run(["git", "add", target], cwd=work)
        notes = [apply_idiom(work, pr, ref, diff) for diff in pr.idioms.get(ref, [])]
        message = upstream_message(run(["git", "log", "-1", "--format=%B"], cwd=work).stdout, pr.title, module)
        message = "\n\n".join([message.rstrip("\n")] + [n for n in notes if n]) + "\n"
        run(["git", "commit", "-q", "--amend", "--reset-author", "-m", message], cwd=work, env=env)
    if pr.squash:
        squash(work, base, pr, env)
    tests = pr.all_tests()
    if tests:
        for rel in tests:
            source = pr.test_source(rel)
            if not os.path.exists(source):
                fail("%s lists test %s, which does not exist" % (CONF, source))
            target = os.path.join(work, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(source) as f:
                text = f.read()
            if rel in pr.fork_sources:
                text = upstream_test_groups(text, rel)
            content = upstream_code(text, rel, diff=False)
            with open(target, "w") as f:
                f.write(content)
            run(["git", "add", target], cwd=work)
        tag, _, title = title_tag(pr.title)
        message = "%s Tests: %s\n\nReproducers (fail without this change): %s\n" % (
            tag, title, ", ".join(os.path.basename(t)[:-5] for t in pr.reproducers) or "none")
        if pr.unverified:
            message += ("\nNot run where this series was checked (no upstream test base for it there): %s\n"
                        % ", ".join(os.path.basename(t)[:-5] for t in pr.unverified))
        run(["git", "commit", "-q", "-m", message], cwd=work, env=env)
    return base


def apply_idiom(work, pr, ref, diff):
    """Folds one of the PR's upstream-idiom diffs into the commit of patch ref (its header says what and why).
    Returns the header's "Commit note:" paragraph, for that commit's message, or None."""
    path = os.path.join(pr.folder(), diff)
    if not os.path.isfile(path):
        fail("%s: upstream-idioms diff %s does not exist" % (pr.name, path))
    with open(path) as f:
        text = f.read()
    if "diff --git " not in text:
        fail("%s: %s holds no diff" % (pr.name, path))
    header, body = text[:text.index("diff --git ")], text[text.index("diff --git "):]
    checked = os.path.join(work, ".git", "idiom.diff")
    with open(checked, "w") as f:
        f.write(upstream_code(body, diff))
    result = run(["git", "apply", "--index", checked], cwd=work, check=False)
    if result.returncode != 0:
        fail("%s: upstream-idioms diff %s does not apply to the %s tree after %s:\n%s" % (
            pr.name, diff, LINE, ref, result.stderr))
    note = re.search(r"^Commit note: (.*?)(?=^\w[\w ]*: |\Z)", header, flags=re.M | re.S)
    return textwrap.fill(upstream_code(" ".join(note.group(1).split()), diff, diff=False), 100) if note else None


def classes_by_patch(pr):
    """The PR's new classes, each with the first of the PR's patches of its module that names it, or names a
    new class that names it (the check compiles every commit); one named by none goes with the module's
    first patch. A PR whose patches need other versions of them is squashed."""
    classes = {}
    for ref in pr.new_classes:
        module, rel, content = new_class_source(ref)
        classes[os.path.basename(rel)[:-5]] = (module, rel, content)
    at = {}
    placed = set()
    for ref in pr.patches:
        module, path = patch_file(ref)
        with open(path) as f:
            names = f.read()
        wanted = [n for n, c in classes.items() if c[0] == module and n not in placed]
        # A class named by the patch, or by a class that goes in with it.
        grew = True
        while grew:
            grew = False
            for name in wanted:
                if name not in placed and re.search(r"\b%s\b" % name, names):
                    placed.add(name)
                    names += classes[name][2]
                    at.setdefault(ref, []).append(classes[name][1:])
                    grew = True
    for name, (module, rel, content) in classes.items():
        if name in placed:
            continue
        first = next((ref for ref in pr.patches if ref.startswith(module + "/")), None)
        if first is None:
            fail("%s: new class %s of %s, but no patch of that module" % (pr.name, rel, module))
        at.setdefault(first, []).append((rel, content))
    return at


def squash(work, base, pr, env):
    """The PR's commits as one: its title, then each commit's subject and reason as a list item."""
    hashes = run(["git", "rev-list", "--reverse", "%s..HEAD" % base], cwd=work).stdout.split()
    items = []
    for commit in hashes:
        subject, _, body = run(["git", "log", "-1", "--format=%B", commit], cwd=work).stdout.partition("\n")
        subject = re.sub(r"^(\[[a-z]+\])+ ", "", subject.strip())
        lines = ["* " + subject] + ["  " + line if line.strip() else "" for line in body.strip().splitlines()]
        items.append("\n".join(lines).rstrip())
    message = "%s\n\n%s\n" % (line_title(pr.title), "\n\n".join(items))
    run(["git", "reset", "-q", "--soft", base], cwd=work)
    run(["git", "commit", "-q", "-m", message], cwd=work, env=env)


def export(out_dir):
    prs = load_prs()
    name, email = author()
    env = git_env(name, email)
    with tempfile.TemporaryDirectory(prefix="upstream-export-") as tmp:
        work = os.path.join(tmp, "pulsar")
        build_upstream_tree(work)
        scratch = os.path.join(tmp, "patches")
        os.makedirs(scratch)
        clear_out_dir(out_dir)
        for pr in prs:
            base = commit_pr(work, pr, env, scratch)
            target = os.path.join(out_dir, pr.name)
            os.makedirs(target)
            run(["git", "format-patch", "-q", "--no-signature", "-o", target, "%s..%s" % (base, pr.name)],
                cwd=work)
            commits = run(["git", "log", "--reverse", "--format=- %s", "%s..%s" % (base, pr.name)],
                          cwd=work).stdout
            write_description(pr, target, commits)
            if pr.pip:
                shutil.copyfile(os.path.join(ROOT, pr.pip), os.path.join(target, "pip.md"))
            changes = pr.test_changes + pr.conf_changes
            if len({os.path.basename(c) for c in changes}) != len(changes):
                fail("%s: two test or conf changes share a file name: %s" % (pr.name, ", ".join(changes)))
            for change in changes:
                source = os.path.join(pr.folder(), change)
                if not os.path.isfile(source):
                    fail("%s: change %s does not exist" % (pr.name, source))
                with open(source) as f:
                    text = f.read()
                # Its added lines go upstream as they are: none may speak of the fork.
                upstream_code(text[text.find("diff --git "):] if "diff --git " in text else text, change)
                shutil.copyfile(source, os.path.join(target, os.path.basename(change)))
            count = len(glob.glob(os.path.join(target, "*.patch")))
            print("%s: %d patch(es), based on %s -> %s" % (pr.name, count, base, target))


def clear_out_dir(out_dir):
    """Removes earlier exports from OUT_DIR (folders with a description.md, PRs since dropped from prs.conf
    too), and nothing else; refuses a folder of this repository outside a target/ folder."""
    inside = os.path.relpath(out_dir, ROOT)
    if not inside.startswith("..") and "target" not in inside.split(os.sep):
        fail("OUT_DIR %s is inside this repository: pick a folder outside it (or under a target/ folder)" % out_dir)
    if not os.path.isdir(out_dir):
        return
    for name in os.listdir(out_dir):
        folder = os.path.join(out_dir, name)
        if os.path.isfile(os.path.join(folder, "description.md")):
            shutil.rmtree(folder)


def backport_branch():
    """4.0.8 -> branch-4.0: the branch a backport PR targets."""
    return "branch-" + ".".join(LINE.split(".")[:2])


def line_title(title):
    """The PR's title on LINE: a backport carries its branch after the tags, as upstream's backport PRs do."""
    if LINE == MAIN_LINE:
        return title
    tags, _, text = title_tag(title)
    return "%s[%s] %s" % (tags, backport_branch(), text)


def write_description(pr, target, commits):
    with open(os.path.join(pr.folder(), "description.md")) as f:
        body = f.read()
    header = "# %s\n\n" % line_title(pr.title)
    if LINE != MAIN_LINE:
        header += ("Backport to `%s` (checked on the %s sources) of the PR of the same name against master; the "
                   "description below is that PR's.\n\n" % (backport_branch(), LINE))
        if pr.backport_differences:
            header += "Differences from the PR on master: %s\n\n" % " ".join(pr.backport_differences.split())
    if pr.stacked_on:
        header += ("This PR is stacked on `%s` (exported next to this one; replace the name by its upstream PR "
                   "link once it is opened): review and merge that one first. Only the commits listed below "
                   "belong to this PR.\n\n" % pr.stacked_on)
    header += "Commits:\n\n%s\n" % commits
    if "- [x] Make sure that the change passes the CI checks." in body \
            or "### Matching PR in forked repository" not in body or "PR in forked repository:" not in body:
        fail("%s/description.md: upstream's template leaves \"passes the CI checks\" for the author to tick "
             "and has a \"Matching PR in forked repository\" section with its \"PR in forked repository:\" "
             "line" % pr.folder())
    if body.count(VERIFICATION_START) != 1 or body.count(VERIFICATION_END) != 1 \
            or body.index(VERIFICATION_START) > body.index(VERIFICATION_END):
        fail("%s/description.md needs one %s ... %s section for the check's results" % (
            pr.folder(), VERIFICATION_START, VERIFICATION_END))
    with open(os.path.join(target, "description.md"), "w") as f:
        f.write(header + body)


# ---------------------------------------------------------------- verify


def changed_main_sources(work, ref):
    """The main .java files that differ between the upstream tree and ref. A deleted or renamed one fails:
    the check compiles against upstream's jar, which would still hold the old class."""
    changes = run(["git", "diff", "--name-status", "upstream-%s" % LINE, ref, "--", "*/src/main/java/*.java"],
                  cwd=work).stdout.splitlines()
    changed = []
    for line in changes:
        status, path = line.split("\t", 1)
        if status not in ("A", "M"):
            fail("%s %s a main file (%s): the check cannot compile that against upstream's jar" % (
                ref, {"D": "deletes", "R": "renames"}.get(status[:1], "changes"), line))
        changed.append(path)
    return changed


def dependent_main_sources(tree_dir, changed):
    """The unchanged main files that subclass a changed class or share its package and name it: they are
    recompiled against the change (a changed signature or an override that no longer applies fails here,
    not at run time). Callers in other packages are left out: some need compile-only dependencies
    (annotations of the REST layer) that no published pom declares."""
    by_module = {}
    for path in changed:
        module, _, rel = path.partition("/src/main/java/")
        by_module.setdefault(module, []).append(rel)
    dependents = []
    for module, rels in by_module.items():
        classes = sorted({os.path.basename(r)[:-5] for r in rels})
        packages = {os.path.dirname(r) for r in rels}
        names = re.compile(r"\b(%s)\b" % "|".join(classes))
        subclass = re.compile(r"\b(extends|implements)\s+[\w.<>, ]*\b(%s)\b" % "|".join(classes))
        root = os.path.join(tree_dir, module, "src/main/java")
        for folder, _, files in os.walk(root):
            package = os.path.relpath(folder, root)
            for name in files:
                path = os.path.relpath(os.path.join(folder, name), tree_dir)
                if not name.endswith(".java") or path in changed:
                    continue
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                if subclass.search(text) or (package in packages and names.search(text)):
                    dependents.append(path)
    return dependents


def checkout_tree(work, ref, into):
    shutil.rmtree(into, ignore_errors=True)
    os.makedirs(into)
    archive = subprocess.run(["git", "archive", ref], cwd=work, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)


def javac(sources, classpath, out, what):
    error = javac_errors(sources, classpath, out)
    if error:
        fail("%s does not compile:\n%s" % (what, error[-12000:]))


class JavacServer:
    """One javac for all the check's compilations (build/JavacServer.java): started once, it compiles an
    argument file per request. A javac process per compilation spent most of the check's time starting and
    warming up."""

    def __init__(self):
        self.process = None

    def compile(self, argfile):
        if self.process is None:
            self.process = subprocess.Popen(
                ["java", "-Xmx3g", os.path.join(ROOT, "build", "JavacServer.java")],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.process.stdin.write(argfile + "\n")
        self.process.stdin.flush()
        code = self.process.stdout.readline().strip()
        if not code:
            fail("the javac server (build/JavacServer.java) stopped; exit code %s" % self.process.wait())
        with open(argfile + ".log", encoding="utf-8", errors="replace") as f:
            return int(code), f.read()

    def stop(self):
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()
            self.process = None


JAVAC = JavacServer()


def javac_errors(sources, classpath, out):
    """Compiles sources into out; returns javac's output when they do not compile, else None."""
    os.makedirs(out, exist_ok=True)
    if not sources:
        return None
    argfile = out + ".args"
    options = ["--release", "17", "-nowarn", "-parameters", "-encoding", "UTF-8", "-cp", classpath, "-d", out]
    with open(argfile, "w") as f:
        # Quoted: a temporary folder may have spaces in its path.
        f.write("\n".join('"%s"' % a.replace("\\", "\\\\") for a in options + sources) + "\n")
    code, output = JAVAC.compile(argfile)
    return None if code == 0 else output


def main_sources_of(work, ref, tree_dir):
    """The main files ref changes and those that depend on them, as paths in tree_dir (ref checked out)."""
    changed = changed_main_sources(work, ref)
    return changed, [os.path.join(tree_dir, p) for p in changed + dependent_main_sources(tree_dir, changed)]


def build_tree(work, ref, tree_dir, classpath, overlay, tests_from=None):
    """Compiles what ref changes in the main sources, then every test file of the tree (with overlay, the
    test files tests_from=(ref, repository) adds, put on it); returns the classpath of the result."""
    checkout_tree(work, ref, tree_dir)
    for rel in overlay:
        content = run(["git", "show", "%s:%s" % (tests_from[0], rel)], cwd=tests_from[1]).stdout
        os.makedirs(os.path.dirname(os.path.join(tree_dir, rel)), exist_ok=True)
        with open(os.path.join(tree_dir, rel), "w") as f:
            f.write(content)
    changed, main = main_sources_of(work, ref, tree_dir)
    main_out = os.path.join(tree_dir, "target-main")
    javac(main, classpath, main_out, "%s (main classes the tree changes, and those that name them)" % ref)
    cp = main_out + os.pathsep + classpath
    test_out = os.path.join(tree_dir, "target-test")
    # Every test file of the tree: a stacked PR's tests may use the test bases of the PR below.
    tests = sorted(glob.glob(os.path.join(tree_dir, "*/src/test/java/**/*.java"), recursive=True))
    javac(tests, cp, test_out, "%s (tests)" % ref)
    return (len(changed), len(main) - len(changed)), test_out + os.pathsep + cp


def testng(classes, classpath, out, reasons):
    shutil.rmtree(out, ignore_errors=True)
    run(["java", "-cp", classpath, "org.testng.TestNG", "-d", out, "-testclass", ",".join(classes)],
        check=False)
    results = {}
    path = os.path.join(out, "testng-results.xml")
    if not os.path.exists(path):
        return results
    rank = {"PASS": 0, "SKIP": 1, "FAIL": 2}
    for cls in ET.parse(path).getroot().iter("class"):
        for m in cls.iter("test-method"):
            status = m.get("status")
            if m.get("is-config") == "true":
                if status != "PASS":
                    key = "%s (configuration %s)" % (cls.get("name"), m.get("name"))
                    results[key] = status
                    reasons[key] = failure_reason(m)
                continue
            key = "%s#%s" % (cls.get("name").rsplit(".", 1)[-1], m.get("name"))
            # A data provider runs a method more than once: its worst run counts.
            if rank.get(results.get(key), -1) >= rank.get(status, 2):
                continue
            results[key] = status
            if status != "PASS":
                reasons[key] = failure_reason(m)
    return results


def failure_reason(method):
    """The exception of a failed test, in one line: its class and the first line of its message."""
    exception = method.find("exception")
    if exception is None:
        return "?"
    message = (exception.findtext("message") or "").strip().splitlines()
    return "%s: %s" % (exception.get("class").rsplit(".", 1)[-1], message[0][:160] if message else "")


def stack_of(prs, pr):
    """The PRs pr is stacked on, lowest first, and pr."""
    by_name = {p.name: p for p in prs}
    stack = [pr]
    while stack[0].stacked_on:
        stack.insert(0, by_name[stack[0].stacked_on])
    return stack


def class_name(rel):
    return rel.split("/src/test/java/", 1)[1][:-5].replace("/", ".")


class PrCheck:
    """The check of one exported PR on the upstream tree: what it printed, and what failed."""

    def __init__(self, prs, pr, work, tmp, classpath):
        self.pr = pr
        self.base = pr.stacked_on or "upstream"
        self.stack = stack_of(prs, pr)
        self.work = work
        self.tmp = tmp
        self.classpath = classpath
        self.summary = []
        self.details = []
        self.failures = []

    def apply(self, out_dir, env):
        run(["git", "checkout", "-q", "-b", self.pr.name, self.base], cwd=self.work)
        series = sorted(glob.glob(os.path.join(out_dir, self.pr.name, "*.patch")))
        if not series:
            fail("%s: no exported series in %s (run bin/export-upstream-pr first)" % (self.pr.name, out_dir))
        result = run(["git", "am", "-q", "-3"] + series, cwd=self.work, env=env, check=False)
        if result.returncode != 0:
            fail("%s: git am -3 failed on the upstream %s tree:\n%s%s" % (
                self.pr.name, LINE, result.stdout, result.stderr))
        self.summary.append("%d patch(es) applied with git am -3" % len(series))

    def run_tests(self, ref, tests, overlay, label, reasons):
        """Builds ref (with overlay, this PR's test files, on a tree below it) and runs the tests."""
        files, cp = build_tree(self.work, ref, os.path.join(self.tmp, label + "-" + self.pr.name), self.classpath,
                               overlay, tests_from=(self.pr.name, self.work))
        results = testng([class_name(t) for t in tests], cp, os.path.join(self.tmp, "results-%s-%s" % (
            label, self.pr.name)), reasons)
        return files, results

    def check_patched(self):
        pr = self.pr
        # The tests of the PRs below this one run on its tree too: a later PR must not break them.
        below = [t for lower in self.stack[:-1] for t in lower.reproducers + lower.tests]
        reasons = {}
        files, results = self.run_tests(pr.name, below + pr.reproducers + pr.tests, [], "patched", reasons)
        self.summary.insert(1, "%d changed main file(s) compiled, with %d dependent one(s) (subclasses, users in "
                                "their packages)" % files)
        if not (pr.reproducers or pr.tests):
            # Nothing of its own checks it: it is not verified, whatever the PRs below show.
            self.failures.append("%s: the PR has no reproducer and no test" % pr.name)
        for test, reason in sorted(reasons.items()):
            self.details.append("FAILS on %s: %s (%s)" % (pr.name, test, reason))
        passed = [k for k, v in results.items() if v == "PASS"]
        other = sorted("%s=%s" % (k, v) for k, v in results.items() if v != "PASS")
        self.summary.append("patched: %d of %d test(s) pass%s" % (
            len(passed), len(results), " (with those of the PRs below)" if below else ""))
        if not results or other:
            self.failures.append("%s: tests that do not pass on the patched tree: %s" % (
                pr.name, ", ".join(other) or "(no test ran)"))

    def check_commits(self):
        """Every commit of the PR compiles on its own (what it changes in the main sources and what depends
        on that): a reviewer, a bisect or a revert sees each one. The tip is compiled, with the tests, by
        check_patched."""
        commits = run(["git", "rev-list", "--reverse", "%s..%s" % (self.base, self.pr.name)],
                      cwd=self.work).stdout.split()
        broken = []
        for index, commit in enumerate(commits[:-1], 1):
            same_main = run(["git", "diff", "--quiet", commit, self.pr.name, "--", "*/src/main/java/*"],
                            cwd=self.work, check=False).returncode == 0
            if same_main:
                continue  # its main sources are the tip's, which check_patched compiles
            tree_dir = os.path.join(self.tmp, "commit-%s-%d" % (self.pr.name, index))
            checkout_tree(self.work, commit, tree_dir)
            _, main = main_sources_of(self.work, commit, tree_dir)
            error = javac_errors(main, self.classpath, os.path.join(tree_dir, "target-main"))
            shutil.rmtree(tree_dir, ignore_errors=True)
            if error:
                subject = run(["git", "log", "-1", "--format=%s", commit], cwd=self.work).stdout.strip()
                first = next((l for l in error.splitlines() if ": error: " in l), error.strip()[:200])
                broken.append("%04d %s" % (index, subject))
                self.details.append("DOES NOT COMPILE: commit %04d (%s): %s" % (
                    index, subject, first.rsplit("/src/main/java/", 1)[-1]))
        self.summary.insert(1, "%d of %d commit(s) compile on their own" % (
            len(commits) - len(broken), len(commits)))
        if broken:
            self.failures.append("%s: commits that do not compile: %s" % (self.pr.name, "; ".join(broken)))

    def check_reproducers(self):
        pr = self.pr
        if not pr.reproducers:
            return
        reasons = {}
        _, results = self.run_tests(self.base, pr.reproducers, pr.support + pr.reproducers, "base", reasons)
        reproduced = self.classify(results, reasons, self.base)
        self.summary.append("on %s (unpatched): %d of %d reproducer test(s) fail on an assertion" % (
            self.base, len(reproduced), len(results)))
        not_reproduced = sorted(set(results) - set(reproduced))
        if not results or not_reproduced:
            self.failures.append("%s: reproducers that do not fail on an assertion on %s: %s" % (
                pr.name, self.base, ", ".join("%s (%s)" % (t, reasons.get(t, results[t])) for t in not_reproduced)
                or "(no test ran)"))
        if pr.stacked_on:
            self.reproducers_on_upstream()

    def classify(self, results, reasons, tree):
        """The tests that reproduce the bug on tree: they failed on an assertion. A timeout, a setup
        failure or an exception of the test's own making is not a reproduction."""
        reproduced = []
        for test in sorted(results):
            reason = reasons.get(test, results[test])
            if results[test] == "FAIL" and reason.startswith(REPRODUCING_FAILURES):
                reproduced.append(test)
                self.details.append("fails on %s: %s (%s)" % (tree, test, reason))
            else:
                self.details.append("%s on %s, not a reproduction: %s (%s)" % (results[test], tree, test, reason))
        return reproduced

    def reproducers_on_upstream(self):
        """A stacked PR's reproducers on upstream itself: a bug upstream has, or one the PRs below brought."""
        support = [t for lower in self.stack for t in lower.support]
        reasons = {}
        _, results = self.run_tests("upstream", self.pr.reproducers, support + self.pr.reproducers, "upstream",
                                    reasons)
        reproduced = self.classify(results, reasons, "upstream")
        self.summary.append("on upstream: %d of %d fail on an assertion (the others are defects of the PRs "
                            "below only)" % (len(reproduced), len(results)))

    def report(self):
        text = "%s: %s" % (self.pr.name, "; ".join(self.summary))
        if self.pr.unverified:
            text += "; not run here: %s" % ", ".join(os.path.basename(t)[:-5] for t in self.pr.unverified)
        return "\n".join([text] + ["    " + d for d in self.details])


# A reproducer reproduces its bug when it fails on an assertion (TestNG's Assert throws AssertionError); a
# timeout, a setup failure or a reflection error of the test's own is not a reproduction.
REPRODUCING_FAILURES = ("AssertionError",)
# The managed-ledger test-jar each line's check takes its test base from (5.0.0-M1 publishes none).
TEST_JAR_LINE = {MAIN_LINE: "4.2.4"}
VERIFICATION_START = "<!-- verification -->"
VERIFICATION_END = "<!-- /verification -->"


def record_verification(out_dir, check):
    """The check's report, in the PR's description and in verification.txt next to its series."""
    folder = os.path.join(out_dir, check.pr.name)
    report = check.report()
    with open(os.path.join(folder, "verification.txt"), "w") as f:
        f.write(report + "\n")
    path = os.path.join(folder, "description.md")
    with open(path) as f:
        body = f.read()
    head, _, rest = body.partition(VERIFICATION_START)
    _, _, tail = rest.partition(VERIFICATION_END)
    block = ("%s\nChecked by `bin/export-upstream-pr` on the %s sources (%s; test base: managed-ledger's "
             "`MockedBookKeeperTestCase` from the %s test-jar%s; plain TestNG):"
             "\n\n```\n%s\n```\n%s" % (VERIFICATION_START, LINE, "passed" if not check.failures else "FAILED",
                                       TEST_JAR_LINE.get(LINE, LINE),
                                       ", as 5.0.0-M1 publishes none" if LINE == MAIN_LINE else "",
                                       report, VERIFICATION_END))
    with open(path, "w") as f:
        f.write(head + block + tail)


def verify(out_dir, classpath):
    prs = load_prs()
    env = git_env(*author())
    failures = []
    with tempfile.TemporaryDirectory(prefix="upstream-verify-") as tmp:
        work = os.path.join(tmp, "pulsar")
        build_upstream_tree(work)
        for pr in prs:
            check = PrCheck(prs, pr, work, tmp, classpath)
            check.apply(out_dir, env)
            check.check_commits()
            check.check_patched()
            check.check_reproducers()
            print(check.report(), flush=True)
            record_verification(out_dir, check)
            failures += check.failures
    JAVAC.stop()
    if failures:
        for f in failures:
            sys.stderr.write("ERROR: " + f + "\n")
        sys.exit(1)
    print("upstream export verified: %d PR(s)" % len(prs))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("out_dir")
    e.add_argument("--sources")
    e.add_argument("--line", default=MAIN_LINE)
    v = sub.add_parser("verify")
    v.add_argument("out_dir")
    v.add_argument("--classpath", required=True)
    v.add_argument("--sources")
    v.add_argument("--line", default=MAIN_LINE)
    args = parser.parse_args()
    global SOURCES_DIR, LINE
    SOURCES_DIR = os.path.abspath(args.sources) if args.sources else None
    LINE = args.line
    if not os.path.isdir(os.path.join(ROOT, "managed-ledger", "patches", LINE)):
        fail("--line %s: no such line (managed-ledger/patches/%s)" % (LINE, LINE))
    if args.command == "export":
        export(os.path.abspath(args.out_dir))
    else:
        verify(os.path.abspath(args.out_dir), args.classpath)


if __name__ == "__main__":
    main()
