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
# check-bytecode-level.sh TARGET_DIR DROP_IN_JAR [JAVA] [EXPECTED_RELEASE]
#
# A drop-in jar must run wherever the upstream jar it replaces runs: every class in it must have the
# class-file major version of upstream's classes (4.0.8's pulsar-client-original is built for Java 8,
# major 52, while our build compiles for 17 by default). Fails when
#   - any class of our jar has a major version above the highest one of the upstream jar;
#   - a class that replaces an upstream class (same entry name) has a different major version;
#   - (with EXPECTED_RELEASE) the release the module compiled at is not the upstream jar's level,
#     so that a wrong per-line setting in the poms is reported as such.
# Multi-release entries (META-INF/versions/N/) are left out of the levels and only counted: our build
# compiles none, and the ones it copies from upstream are upstream's own.
#
# JAVA is the java launcher to run the checker with (default: java on the PATH); it runs as a
# single-file source program, so it needs no build of its own (Java 11 or later).
set -euo pipefail
target=$1
jar=$2
java=${3:-java}
expected=${4:-}
upstream=$target/upstream/upstream.jar

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/BytecodeLevel.java" <<'EOF'
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

public class BytecodeLevel {
    // Class name to major version, multi-release entries apart.
    static final class Levels {
        final Map<String, Integer> classes = new TreeMap<>();
        final Map<String, Integer> versioned = new TreeMap<>();

        int max() {
            return classes.values().stream().mapToInt(Integer::intValue).max().orElse(0);
        }

        String distribution(Map<String, Integer> of) {
            Map<Integer, Integer> counts = new TreeMap<>();
            of.values().forEach(v -> counts.merge(v, 1, Integer::sum));
            StringBuilder sb = new StringBuilder();
            counts.forEach((major, n) -> sb.append(sb.length() == 0 ? "" : ", ")
                    .append(n).append(" x ").append(major).append(" (Java ").append(major - 44).append(')'));
            return sb.length() == 0 ? "none" : sb.toString();
        }
    }

    static Levels read(String path) throws IOException {
        Levels levels = new Levels();
        try (ZipFile zip = new ZipFile(path)) {
            for (Enumeration<? extends ZipEntry> e = zip.entries(); e.hasMoreElements();) {
                ZipEntry entry = e.nextElement();
                if (entry.isDirectory() || !entry.getName().endsWith(".class")) {
                    continue;
                }
                try (InputStream in = zip.getInputStream(entry)) {
                    DataInputStream data = new DataInputStream(in);
                    if (data.readInt() != 0xCAFEBABE) {
                        throw new IOException(path + "!" + entry.getName() + " is not a class file");
                    }
                    data.readUnsignedShort();
                    int major = data.readUnsignedShort();
                    (entry.getName().startsWith("META-INF/versions/") ? levels.versioned : levels.classes)
                            .put(entry.getName(), major);
                }
            }
        }
        return levels;
    }

    // The classes this module compiled (target/classes), to report the level they came out at.
    static Levels readDirectory(Path dir) throws IOException {
        Levels levels = new Levels();
        if (!Files.isDirectory(dir)) {
            return levels;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".class"))::iterator) {
                try (DataInputStream data = new DataInputStream(Files.newInputStream(file))) {
                    data.readInt();
                    data.readUnsignedShort();
                    levels.classes.put(dir.relativize(file).toString(), data.readUnsignedShort());
                }
            }
        }
        return levels;
    }

    public static void main(String[] args) throws IOException {
        String upstreamPath = args[0];
        String oursPath = args[1];
        String jarName = oursPath.substring(oursPath.lastIndexOf('/') + 1);
        String upstreamName = upstreamPath;
        try (JarFile jar = new JarFile(oursPath)) {
            Manifest manifest = jar.getManifest();
            String coordinates = manifest == null ? null
                    : manifest.getMainAttributes().getValue("Pulsar-Fork-Upstream");
            if (coordinates != null) {
                upstreamName = coordinates;
            }
        }
        Levels upstream = read(upstreamPath);
        Levels ours = read(oursPath);
        Levels compiled = readDirectory(Paths.get(args[3]));
        int max = upstream.max();
        List<String> errors = new ArrayList<>();
        if (!args[2].isEmpty()) {
            int release = Integer.parseInt(args[2]);
            if (release + 44 != max) {
                errors.add("the module compiles with --release " + release + " (major " + (release + 44)
                        + ") but upstream's jar is at major " + max + " (Java " + (max - 44)
                        + "): set this module's release for this line in pom.xml to " + (max - 44));
            }
        }
        int above = 0;
        int differ = 0;
        for (Map.Entry<String, Integer> c : ours.classes.entrySet()) {
            Integer theirs = upstream.classes.get(c.getKey());
            int mine = c.getValue();
            if (mine > max) {
                above++;
                if (above <= 20) {
                    errors.add(c.getKey() + " is major " + mine + " (Java " + (mine - 44) + "), above upstream's"
                            + " highest, " + max + " (Java " + (max - 44) + "): a Java " + (max - 44)
                            + " runtime that runs upstream's jar cannot load it");
                }
            } else if (theirs != null && theirs != mine) {
                differ++;
                if (differ <= 20) {
                    errors.add(c.getKey() + " is major " + mine + " (Java " + (mine - 44) + ") but the upstream"
                            + " class it replaces is major " + theirs + " (Java " + (theirs - 44) + ")");
                }
            }
        }
        if (above > 20 || differ > 20) {
            errors.add("... " + above + " classes above upstream's level, " + differ
                    + " replaced classes at another level in all");
        }
        String mr = ours.versioned.isEmpty() && upstream.versioned.isEmpty() ? ""
                : "; multi-release entries (not checked): upstream " + upstream.distribution(upstream.versioned)
                + ", ours " + ours.distribution(ours.versioned);
        if (!errors.isEmpty()) {
            System.err.println("ERROR: bytecode level of " + jarName + " does not match upstream "
                    + upstreamName + " (max major " + max
                    + ", Java " + (max - 44) + "): each class must be at the level of the upstream jar it replaces.");
            errors.forEach(line -> System.err.println("    " + line));
            System.exit(1);
        }
        System.out.println("bytecode check: " + jarName + ": upstream " + upstreamName + " "
                + upstream.distribution(upstream.classes) + "; ours " + ours.distribution(ours.classes)
                + ", compiled here " + compiled.distribution(compiled.classes) + mr);
    }
}
EOF
"$java" "$tmp/BytecodeLevel.java" "$upstream" "$jar" "$expected" "$target/classes"
