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

import static org.pulsarfork.dropin.Commands.REPO;
import static org.pulsarfork.dropin.Commands.assembleStandaloneHome;
import static org.pulsarfork.dropin.Commands.hardLinkedCopy;
import static org.pulsarfork.dropin.Commands.run;
import static org.pulsarfork.dropin.Commands.stageOurJars;
import static org.pulsarfork.dropin.Commands.unpackServerDistribution;
import java.nio.file.Files;
import java.nio.file.Path;
import org.testng.SkipException;

/**
 * Broker homes for the real-process tests: upstream's unpacked 4.0.8 server distribution, or on 4.2.4 and 5.0.0-M1
 * a home assembled from upstream's Maven artifacts, copied (hard links) once per jar set, with our jars installed
 * and verified by {@code bin/drop-in} in the "ours" copy.
 */
final class StandaloneHomes {
    private final Path work;
    private final Path pristine;
    private final Path dist;

    private StandaloneHomes(Path work, Path pristine, Path dist) {
        this.work = work;
        this.pristine = pristine;
        this.dist = dist;
    }

    /** Skips the calling test class where {@code switchProperty} is false. */
    static StandaloneHomes unpack(String directory, String switchProperty, boolean byDefault) throws Exception {
        if (!Boolean.parseBoolean(System.getProperty(switchProperty, String.valueOf(byDefault)))) {
            throw new SkipException("left out: -D" + switchProperty + "=false");
        }
        Path work = REPO.resolve("tests/target").resolve(directory);
        run(REPO, "rm", "-rf", work.toString());
        Files.createDirectories(work);
        Path pristine = unpackServerDistribution(work);
        if (pristine == null) {
            pristine = assembleStandaloneHome(work);
        }
        return new StandaloneHomes(work, pristine, stageOurJars(work));
    }

    /** The folder the homes are in, for what a test lays out beside them. */
    Path work() {
        return work;
    }

    /** A fresh home for {@code jars} ("upstream" or "ours"). */
    Path home(String jars) throws Exception {
        return home(jars, jars);
    }

    /** A fresh home for {@code jars}, in its own folder {@code name} (two brokers of one jar set). */
    Path home(String jars, String name) throws Exception {
        Path home = hardLinkedCopy(pristine, work.resolve(name));
        if ("ours".equals(jars)) {
            install(home);
        }
        return home;
    }

    /** {@code bin/drop-in install}, then {@code verify}, on a home whose broker is stopped. */
    void install(Path home) throws Exception {
        run(REPO, "bin/drop-in", "install", home.toString(), "--dist", dist.toString());
        run(REPO, "bin/drop-in", "verify", home.toString(), "--dist", dist.toString());
    }

    /** {@code bin/drop-in rollback} on a home whose broker is stopped: upstream's jars again. */
    void rollback(Path home) throws Exception {
        run(REPO, "bin/drop-in", "rollback", home.toString());
    }
}
