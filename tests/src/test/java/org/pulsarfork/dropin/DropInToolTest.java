/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.pulsarfork.dropin;

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.dropin.Commands.LINE;
import static org.pulsarfork.dropin.Commands.REPO;
import static org.pulsarfork.dropin.Commands.exec;
import static org.pulsarfork.dropin.Commands.hardLinkedCopy;
import static org.pulsarfork.dropin.Commands.jar;
import static org.pulsarfork.dropin.Commands.rewrite;
import static org.pulsarfork.dropin.Commands.run;
import static org.pulsarfork.dropin.Commands.stageOurJars;
import static org.pulsarfork.dropin.Commands.unpackServerDistribution;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertTrue;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * {@code bin/drop-in} on a Pulsar distribution of this line: on 4.0.8 upstream's real server distribution
 * (unpacked from Maven Central), on the other lines, which publish none, a home in the docker image's layout
 * ({@code /pulsar/lib}) holding upstream's three jars. Every refusal must leave the home byte for byte as it
 * was, and a rollback must restore it byte for byte (content and permissions).
 */
@Test(groups = FORK_ONLY)
public class DropInToolTest {
    private static final String[] ARTIFACTS = {"managed-ledger", "pulsar-client-original", "pulsar-broker"};

    private Path work;
    private Path dist;
    private Path pristine;
    private Path home;

    // In the group and not alwaysRun: the upstream run leaves the group out and must not unpack 245 MB.
    @BeforeClass(groups = FORK_ONLY)
    public void stageDistributionAndOurJars() throws Exception {
        work = REPO.resolve("tests/target/drop-in-test");
        run(REPO, "rm", "-rf", work.toString());
        Files.createDirectories(work);
        dist = stageOurJars(work);
        pristine = unpackServerDistribution(work);
        if (pristine == null) {
            // The docker image's layout: /pulsar/{bin,conf,lib}.
            pristine = work.resolve("pristine/pulsar");
            Path lib = Files.createDirectories(pristine.resolve("lib"));
            Files.createDirectories(pristine.resolve("conf"));
            Files.writeString(pristine.resolve("conf/broker.conf"), "clusterName=standalone\n");
            for (String[] module : new String[][] {{"managed-ledger", "managed-ledger"},
                    {"pulsar-client-patch", "pulsar-client-original"}, {"pulsar-broker-patch", "pulsar-broker"}}) {
                Files.copy(REPO.resolve(module[0]).resolve("target/upstream/upstream.jar"),
                        lib.resolve(jar(module[1])));
            }
            Files.writeString(lib.resolve("org.apache.pulsar-pulsar-common-" + LINE + ".jar"), "not ours to touch");
        }
        assertTrue(Files.isRegularFile(pristine.resolve("lib").resolve(jar("managed-ledger"))), pristine.toString());
    }

    /** A fresh home for each test: a hard-linked copy of the pristine one (the tool never writes a file in place). */
    @BeforeMethod(groups = FORK_ONLY)
    public void freshHome() throws Exception {
        Path homes = work.resolve("homes");
        run(REPO, "rm", "-rf", homes.toString());
        home = hardLinkedCopy(pristine, homes);
    }

    public void installVerifyAndRollbackRestoreEveryFileByteForByte() throws Exception {
        Map<String, String> before = snapshot(home);
        dropIn("verify").expect(5, "upstream's " + LINE + " jar", "no jar of ours is installed");

        dropIn("install").expect(0, "installed lib/" + jar("managed-ledger"), "all three jars (recommended)");
        for (String artifact : ARTIFACTS) {
            assertEquals(sha256(lib(artifact)), sha256(dist.resolve(jar(artifact))), artifact);
            assertEquals(sha256(home.resolve(".pulsar-fork-backup").resolve(jar(artifact))),
                    before.get(libKey(artifact)).split(" ")[0], "backup of " + artifact);
        }
        Map<String, String> installed = snapshot(home);
        before.forEach((file, digest) -> {
            if (!Arrays.stream(ARTIFACTS).map(DropInToolTest::libKey).anyMatch(file::equals)) {
                assertEquals(installed.get(file), digest, "install touched " + file);
            }
        });
        dropIn("verify").expect(0, "ours, line " + LINE, "Supported set 'managed-ledger,pulsar-client-original,"
                + "pulsar-broker'", "backup .pulsar-fork-backup/" + jar("pulsar-broker") + ": upstream's file, intact");

        dropIn("rollback").expect(0, "restored upstream's lib/" + jar("pulsar-broker"), "upstream's jars again");
        assertEquals(snapshot(home), before, "rollback must restore the home byte for byte");
        dropIn("rollback").expect(0, "nothing to roll back");
    }

    public void aSecondInstallChangesNothing() throws Exception {
        dropIn("install").expect(0);
        Map<String, String> once = snapshot(home);
        dropIn("install").expect(0, "already installed; nothing to do");
        assertEquals(snapshot(home), once);
    }

    public void aVersionWithoutOurJarsIsRefused() throws Exception {
        for (String artifact : ARTIFACTS) {
            Files.move(lib(artifact), home.resolve("lib/org.apache.pulsar-" + artifact + "-3.3.0.jar"));
        }
        Map<String, String> before = snapshot(home);
        dropIn("install").expect(2, "this fork has no drop-in jars for Pulsar 3.3.0 (lines: 4.0.8 4.2.4 5.0.0-M1)");
        dropIn("verify").expect(2, "no drop-in jars for Pulsar 3.3.0");
        assertEquals(snapshot(home), before);
    }

    public void aMissingFileIsRefused() throws Exception {
        Files.delete(lib("pulsar-broker"));
        Map<String, String> before = snapshot(home);
        dropIn("install").expect(2, "lacks lib/" + jar("pulsar-broker"));
        assertEquals(snapshot(home), before);

        Path notPulsar = Files.createDirectories(work.resolve("homes/not-pulsar/lib")).getParent();
        dropIn(notPulsar, "install").expect(2, "not a Pulsar broker distribution");
    }

    public void aJarChangedBySomethingElseIsRefused() throws Exception {
        rewrite(lib("pulsar-client-original"), "patched by someone else");
        Map<String, String> before = snapshot(home);
        dropIn("install").expect(3, "lib/" + jar("pulsar-client-original") + " is neither upstream's",
                "nothing changed");
        assertEquals(snapshot(home), before, "nothing changed, no backup folder");
        dropIn("verify").expect(3, "UNKNOWN");
    }

    public void aCorruptedBackupIsReportedAndNotRestored() throws Exception {
        dropIn("install").expect(0);
        Path backup = home.resolve(".pulsar-fork-backup").resolve(jar("managed-ledger"));
        byte[] bytes = Files.readAllBytes(backup);
        bytes[bytes.length / 2] ^= 0x01;
        Files.write(backup, bytes);
        Map<String, String> before = snapshot(home);
        dropIn("verify").expect(3, "CORRUPTED");
        dropIn("rollback").expect(3, "corrupted backup", "nothing changed");
        assertEquals(snapshot(home), before, "our jars stay installed; nothing half restored");
    }

    public void aBackupFileDeletedAfterInstallStopsRollbackAndReinstall() throws Exception {
        dropIn("install").expect(0);
        Files.delete(home.resolve(".pulsar-fork-backup").resolve(jar("pulsar-broker")));
        Map<String, String> before = snapshot(home);
        dropIn("rollback").expect(3, "missing or not the upstream file", "nothing changed");
        dropIn("install").expect(3, "no intact copy of upstream's file");
        dropIn("verify").expect(3);
        assertEquals(snapshot(home), before, "our jars stay; nothing half restored");
    }

    /** What a run killed midway leaves in lib/ (hidden, not on the class path) is reported and removed. */
    public void filesLeftByAnInterruptedRunAreRemoved() throws Exception {
        Map<String, String> original = snapshot(home);
        dropIn("install").expect(0);
        Files.writeString(home.resolve("lib/." + jar("pulsar-broker") + ".drop-in-tmp"), "half copied");
        dropIn("verify").expect(0, "left from an interrupted run");
        dropIn("rollback").expect(0);
        assertEquals(snapshot(home), original);
    }

    public void aReadOnlyLibChangesNothing() throws Exception {
        Path lib = home.resolve("lib");
        boolean mounted = false;
        Files.setPosixFilePermissions(lib, PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            if (Files.isWritable(lib)) {
                // Root ignores permissions: make lib/ a read-only bind mount instead, where that is allowed.
                mounted = exec(REPO, "mount", "--bind", lib.toString(), lib.toString()).exitCode == 0
                        && exec(REPO, "mount", "-o", "remount,bind,ro", lib.toString()).exitCode == 0;
                if (!mounted || probeWritable(lib)) {
                    throw new SkipException("cannot make " + lib + " read-only here (root without mount)");
                }
            }
            Map<String, String> before = snapshot(home);
            dropIn("install").expect(4, "nothing changed");
            assertEquals(snapshot(home), before, "nothing changed, no backup folder");
        } finally {
            if (mounted || isMountPoint(lib)) {
                exec(REPO, "umount", lib.toString());
            }
            Files.setPosixFilePermissions(lib, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    public void subsetsInstallExactlyTheirJars() throws Exception {
        Map<String, String> before = snapshot(home);
        dropIn("install", "--jars", "managed-ledger").expect(0, "set 'managed-ledger': cursor fixes");
        assertEquals(sha256(lib("managed-ledger")), sha256(dist.resolve(jar("managed-ledger"))));
        assertEquals(snapshot(home).get(libKey("pulsar-broker")), before.get(libKey("pulsar-broker")));
        dropIn("verify").expect(0, "Supported set 'managed-ledger'");

        dropIn("install", "--jars", "all,managed-ledger").expect(0);
        dropIn("verify").expect(0, "Supported set 'managed-ledger,pulsar-client-original,pulsar-broker'");
        dropIn("install", "--jars", "pulsar-broker,managed-ledger").expect(0,
                "put back upstream's lib/" + jar("pulsar-client-original"));
        assertEquals(snapshot(home).get(libKey("pulsar-client-original")),
                before.get(libKey("pulsar-client-original")));
        dropIn("verify").expect(0, "Supported set 'managed-ledger,pulsar-broker'");

        dropIn("install", "--jars", "pulsar-broker").expect(3, "unsupported set 'pulsar-broker'");
        dropIn("install", "--jars", "bookkeeper").expect(1, "unknown jar 'bookkeeper'");
        dropIn("rollback").expect(0);
        assertEquals(snapshot(home), before);
    }

    public void aRunningBrokerOfTheHomeIsReported() throws Exception {
        // "; true" keeps bash from exec'ing sleep, so the process keeps the class-path-like argument.
        Process broker = new ProcessBuilder("bash", "-c", "sleep 120; true", home.toRealPath().resolve("lib") + "/*")
                .start();
        try {
            dropIn("install").expect(0, "WARNING: a process of " + home.toRealPath() + " is running (pid "
                    + broker.pid() + "): restart it");
        } finally {
            broker.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    public void badArgumentsAreUsageErrors() throws Exception {
        assertEquals(exec(REPO, "bin/drop-in").exitCode, 1);
        assertEquals(exec(REPO, "bin/drop-in", "upgrade", home.toString()).exitCode, 1);
        assertEquals(exec(REPO, "bin/drop-in", "install").exitCode, 1);
        assertEquals(exec(REPO, "bin/drop-in", "verify", home.toString(), "--jars", "all,managed-ledger").exitCode, 1);
        assertEquals(exec(REPO, "bin/drop-in", "--help").exitCode, 0);
    }

    private Commands.Run dropIn(String... args) throws Exception {
        return dropIn(home, args);
    }

    private Commands.Run dropIn(Path pulsarHome, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("bin/drop-in", args[0], pulsarHome.toString(),
                "--dist", dist.toString()));
        if (!"rollback".equals(args[0])) {
            command.addAll(Arrays.asList(args).subList(1, args.length));
        }
        return exec(REPO, command.toArray(new String[0]));
    }

    private static String libKey(String artifact) {
        return "lib/" + jar(artifact);
    }

    private Path lib(String artifact) {
        return home.resolve(libKey(artifact));
    }

    private static boolean probeWritable(Path dir) {
        try {
            Files.delete(Files.createTempFile(dir, ".probe", ""));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean isMountPoint(Path dir) throws Exception {
        return exec(REPO, "mountpoint", "-q", dir.toString()).exitCode == 0;
    }

    /** Every file and folder under {@code root}: SHA-256 and permissions, folders by permissions only. */
    private static Map<String, String> snapshot(Path root) throws IOException {
        Map<String, String> entries = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(root)) {
            paths.forEach(path -> {
                try {
                    String permissions = PosixFilePermissions.toString(
                            Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
                    String key = root.relativize(path).toString();
                    if (Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS)) {
                        entries.put(key, sha256(path) + " " + permissions);
                    } else {
                        entries.put(key + "/", permissions);
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
        assertNotEquals(entries.size(), 0);
        return entries;
    }

    private static String sha256(Path file) throws IOException {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            try (var in = Files.newInputStream(file)) {
                byte[] buffer = new byte[1 << 16];
                int n;
                while ((n = in.read(buffer)) > 0) {
                    digest.update(buffer, 0, n);
                }
            }
            return HexFormat.of().formatHex(digest.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
