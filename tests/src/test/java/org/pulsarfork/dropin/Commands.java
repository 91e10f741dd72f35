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

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.fail;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Commands of this repository and of the machine, run from the tests, and the distribution they act on. */
final class Commands {
    static final Path REPO = Paths.get(System.getProperty("fork.root")).toAbsolutePath();
    static final String LINE = System.getProperty("pulsar.line");

    /** One finished command. */
    static final class Run {
        final int exitCode;
        final String output;

        Run(int exitCode, String output) {
            this.exitCode = exitCode;
            this.output = output;
        }

        Run expect(int code, String... fragments) {
            assertEquals(exitCode, code, output);
            for (String fragment : fragments) {
                assertTrue(output.contains(fragment), "expected '" + fragment + "' in:\n" + output);
            }
            return this;
        }
    }

    private Commands() {
    }

    static Run exec(Path dir, String... command) throws Exception {
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(120, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            fail("timed out: " + String.join(" ", command));
        }
        return new Run(process.exitValue(), output);
    }

    static void run(Path dir, String... command) throws Exception {
        Run result = exec(dir, command);
        assertEquals(result.exitCode, 0, String.join(" ", command) + ": " + result.output);
    }

    static String jar(String artifact) {
        return "org.apache.pulsar-" + artifact + "-" + LINE + ".jar";
    }

    /** Our jars of this line as {@code bin/build-jars} lays them out, from the module targets of this build. */
    static Path stageOurJars(Path work) throws Exception {
        Path dist = work.resolve("dist");
        run(REPO, "build/stage-dist.sh", LINE, dist.toString());
        return dist;
    }

    /**
     * Upstream's server distribution of this line, unpacked under {@code work}, or null when the line
     * publishes none (only 4.0.8 does; its absence there is a failure, not a skip): see
     * {@link #assembleStandaloneHome}.
     */
    static Path unpackServerDistribution(Path work) throws Exception {
        return "4.0.8".equals(LINE) ? unpack408Distribution(work) : null;
    }

    /**
     * Upstream's 4.0.8 server distribution unpacked under {@code work}, whatever the line: on 4.2.4 and 5.0.0-M1
     * the pulsar-perf client comes from it (their pulsar-testclient is not on Maven Central).
     */
    static Path unpack408Distribution(Path work) throws Exception {
        String archive = System.getProperty("dropin.distribution", "");
        assertTrue(!archive.isEmpty() && Files.isRegularFile(Paths.get(archive)),
                "the 4.0.8 server distribution must be resolved (dropin.distribution=" + archive + ")");
        Path unpacked = Files.createDirectories(work.resolve("pristine"));
        run(unpacked, "tar", "xzf", archive);
        return unpacked.resolve("apache-pulsar-4.0.8");
    }

    /**
     * A standalone broker home of this line assembled from upstream's Maven artifacts (4.2.4, 5.0.0-M1: no server
     * distribution), under {@code work}: {@code lib/} as a distribution names its jars
     * ({@code groupId-artifactId-version[-classifier].jar}), hard links into what the standalone-home module
     * resolved, and {@code conf/} from that module.
     */
    static Path assembleStandaloneHome(Path work) throws Exception {
        Path repository = REPO.resolve("standalone-home/target/repository").resolve(LINE);
        assertTrue(Files.isDirectory(repository), repository + " is missing: build the standalone-home module first"
                + " (mvn -Dpulsar.line=" + LINE + " verify builds it before tests)");
        Path home = Files.createDirectories(work.resolve("pristine").resolve("apache-pulsar-" + LINE));
        Path lib = Files.createDirectories(home.resolve("lib"));
        try (Stream<Path> jars = Files.walk(repository)) {
            for (Path jar : (Iterable<Path>) jars.filter(p -> p.toString().endsWith(".jar"))::iterator) {
                // .../group/path/artifactId/version/file.jar
                Path relative = repository.relativize(jar);
                int n = relative.getNameCount();
                String group = relative.subpath(0, n - 3).toString().replace('/', '.');
                Files.createLink(lib.resolve(group + "-" + jar.getFileName()), jar);
            }
        }
        assertTrue(Files.isRegularFile(lib.resolve(jar("managed-ledger"))), "no " + jar("managed-ledger")
                + " in " + lib);
        run(REPO, "cp", "-r", REPO.resolve("standalone-home/conf").toString(), home.toString());
        return home;
    }

    /** A copy of {@code pristine} into {@code parent} whose files are hard links: write none in place. */
    static Path hardLinkedCopy(Path pristine, Path parent) throws Exception {
        Files.createDirectories(parent);
        run(REPO, "cp", "-al", pristine.toString(), parent.toString());
        return parent.resolve(pristine.getFileName());
    }

    /** Replaces a file by a new one, so a hard-linked original keeps its content. */
    static void rewrite(Path file, String content) throws Exception {
        Path tmp = file.resolveSibling(file.getFileName() + ".new");
        Files.writeString(tmp, content);
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
}
