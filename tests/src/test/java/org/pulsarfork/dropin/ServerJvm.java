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

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of one upstream server process run by {@code java} from a home's {@code lib/}: the JVM options
 * 4.0.8's {@code bin/pulsar} gives its servers (its OPTS and ZK_OPTS; not the JDK 23+ and native-access switches,
 * for the Java 17 the tests run on). The broker reads JDK internals for its load report and GC metrics, Netty and
 * BookKeeper need direct buffers and checksums, ZooKeeper restarts on a snapshot a kill -9 may have left empty.
 */
final class ServerJvm {
    private ServerJvm() {
    }

    /**
     * {@code java} with {@code memory} (heap and direct memory options), {@code logConfig} (a log4j2 file, relative
     * to the process's folder or absolute), {@code home}'s {@code lib/} as the class path, then {@code main} and its
     * arguments.
     */
    static List<String> command(Path home, String memory, String logConfig, String main, String... arguments) {
        List<String> java = new ArrayList<>();
        java.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        java.addAll(List.of(memory.split(" ")));
        for (String open : new String[] {"java.base/java.io", "java.base/java.util.zip",
                "java.management/sun.management", "jdk.management/com.sun.management.internal", "java.base/java.nio",
                "java.base/jdk.internal.misc", "java.base/jdk.internal.platform"}) {
            java.addAll(List.of("--add-opens", open + "=ALL-UNNAMED"));
        }
        java.addAll(List.of("-Djava.net.preferIPv4Stack=true", "-Djute.maxbuffer=10485760",
                "-Dzookeeper.clientTcpKeepAlive=true", "-Dio.netty.tryReflectionSetAccessible=true",
                "-Dorg.apache.pulsar.shade.io.netty.tryReflectionSetAccessible=true",
                "-Dzookeeper.4lw.commands.whitelist=*", "-Dzookeeper.snapshot.trust.empty=true",
                "-Dzookeeper.tcpKeepAlive=true", "-Dlog4j.shutdownHookEnabled=false",
                "-Dlog4j.configurationFile=" + logConfig,
                // Absolute: bin/drop-in recognizes a running broker of this home by its lib/ on the command line.
                "-cp", home.resolve("lib").toAbsolutePath() + File.separator + "*", main));
        java.addAll(List.of(arguments));
        return java;
    }
}
