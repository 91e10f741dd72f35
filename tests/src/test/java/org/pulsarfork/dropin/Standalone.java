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

import static org.awaitility.Awaitility.await;
import static org.pulsarfork.dropin.Commands.rewrite;
import static org.testng.Assert.assertTrue;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;

/**
 * One standalone broker on loopback ports of its own, its data and log in its home, started again on the same data
 * after a {@code kill -9}: {@code bin/pulsar standalone} of upstream's 4.0.8 server distribution, or, in a home
 * assembled from Maven artifacts (4.2.4, 5.0.0-M1), upstream's {@code PulsarStandaloneStarter} run by {@code java}
 * with the options {@code bin/pulsar} gives it.
 */
final class Standalone {
    private static final Duration START = Duration.ofSeconds(180);
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final String MEMORY = "-Xms256m -Xmx1g -XX:MaxDirectMemorySize=512m";
    static final String SENTINEL = "sentinel";
    private final Path home;
    private final int brokerPort;
    private final int webPort;
    private final int bookiePort;
    private final int zkPort;
    private final Path log;
    // Upstream's server distribution (bin/pulsar), or a home assembled from Maven artifacts.
    private final boolean distribution;
    private Process process;

    Standalone(Path home) throws Exception {
        this.home = home;
        this.brokerPort = freePort();
        this.webPort = freePort();
        this.bookiePort = freePort();
        this.zkPort = freePort();
        this.log = home.resolve("standalone.log");
        this.distribution = Files.isRegularFile(home.resolve("bin/pulsar"));
        Path conf = home.resolve("conf/standalone.conf");
        rewrite(conf, Files.readString(conf)
                .replaceAll("(?m)^bindAddress=.*$", "bindAddress=127.0.0.1")
                .replaceAll("(?m)^advertisedAddress=.*$", "advertisedAddress=127.0.0.1")
                .replaceAll("(?m)^brokerServicePort=.*$", "brokerServicePort=" + brokerPort)
                .replaceAll("(?m)^webServicePort=.*$", "webServicePort=" + webPort)
                // The embedded bookie listens on all interfaces otherwise.
                + "\nlisteningInterface=lo\n");
        if (!distribution) {
            // The assembled home's conf/log4j2.xml (standalone-home/conf) sets these loggers itself.
            return;
        }
        Path logConf = home.resolve("conf/log4j2.yaml");
        String logging = Files.readString(logConf);
        String loggers = "    Logger:\n";
        assertTrue(logging.contains(loggers), "log4j2.yaml layout changed");
        // With the RocksDB metadata store, a standalone restarted after a kill -9 re-registered its bookie in a
        // loop: tens of thousands of INFO lines a second from these two loggers. Kept quiet in case it recurs.
        rewrite(logConf, logging.replaceFirst(loggers, loggers
                + logger("org.apache.pulsar.compaction.CompactedTopicImpl", "debug")
                + logger("org.apache.pulsar.metadata.coordination.impl.ResourceLockImpl", "warn")
                + logger("org.apache.pulsar.metadata.impl.AbstractMetadataStore", "warn")));
    }

    private static String logger(String name, String level) {
        return "      - name: " + name + "\n"
                + "        level: " + level + "\n"
                + "        additivity: false\n"
                + "        AppenderRef:\n"
                + "          - ref: Console\n";
    }

    void start() throws Exception {
        List<String> command = new ArrayList<>(distribution ? List.of("bin/pulsar", "standalone") : starter());
        command.addAll(List.of("-nfw", "-nss", "--bookkeeper-dir", "data/standalone/bookkeeper"));
        if (Commands.LINE.startsWith("4.")) {
            command.addAll(List.of("--bookkeeper-port", String.valueOf(bookiePort),
                    "--zookeeper-port", String.valueOf(zkPort), "--zookeeper-dir", "data/standalone/zookeeper"));
        } else {
            // 5.0.0-M1's starter dropped --bookkeeper-port (its bookie takes a free port) and defaults to RocksDB,
            // which is kept here: its restarts after kill -9 all read (docs/drop-in.md), unlike 4.0.8's.
            command.addAll(List.of("--metadata-dir", "data/standalone/metadata"));
        }
        ProcessBuilder builder = new ProcessBuilder(command)
                .directory(home.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        if (Commands.LINE.startsWith("4.")) {
            // ZooKeeper, not the default RocksDB metadata store: with RocksDB the restarted 4.0.8 standalone found
            // the killed process's bookie registration and re-registered in a loop, its reads failing at random;
            // a ZooKeeper session of the killed process expires and takes its registration with it.
            builder.environment().put("PULSAR_STANDALONE_USE_ZOOKEEPER", "1");
        }
        builder.environment().put("PULSAR_LOG_APPENDER", "Console");
        builder.environment().put("PULSAR_MEM", MEMORY);
        builder.environment().put("PULSAR_GC_LOG", " ");
        process = builder.start();
        // A test JVM that exits without reaching kill9() (a timeout, an interrupted build) must not leave a broker.
        Process started = process;
        Runtime.getRuntime().addShutdownHook(new Thread(started::destroyForcibly, "kill-standalone"));
        // failFast, not an assertion in the condition: ignoreExceptions would turn an exit into a START timeout.
        await().atMost(START).pollInterval(Duration.ofSeconds(1)).ignoreExceptions()
                .failFast("standalone exited; see " + log, () -> !process.isAlive())
                .until(() -> HTTP.send(request("/admin/v2/namespaces/public/default").GET().build(),
                        HttpResponse.BodyHandlers.ofString()).statusCode() == 200);
    }

    /**
     * What {@code bin/pulsar standalone} runs, for a home without it: upstream's starter with our {@code conf/}
     * ({@link ServerJvm}).
     */
    private List<String> starter() {
        List<String> java = ServerJvm.command(home, MEMORY, "conf/log4j2.xml",
                "org.apache.pulsar.PulsarStandaloneStarter", "--config", "conf/standalone.conf");
        // conf/ first on the class path, as bin/pulsar puts it.
        int classPath = java.indexOf("-cp") + 1;
        java.set(classPath, "conf" + File.pathSeparator + java.get(classPath));
        return java;
    }

    /** SIGKILL: no shutdown hook, no cursor flush. */
    void kill9() throws Exception {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS), "standalone did not die");
        }
    }

    /** With no process running (before a start, or after {@link #kill9}): the next start is on empty disks. */
    void wipeData() throws Exception {
        assertTrue(process == null || !process.isAlive(), "wiping the data of a running standalone");
        Commands.run(home, "rm", "-rf", "data");
    }

    Path home() {
        return home;
    }

    String serviceUrl() {
        return "pulsar://127.0.0.1:" + brokerPort;
    }

    String webServiceUrl() {
        return "http://127.0.0.1:" + webPort;
    }

    /** Appends broker settings to {@code conf/standalone.conf} (a later key wins); takes effect at the next start. */
    void configure(String settings) throws Exception {
        Path conf = home.resolve("conf/standalone.conf");
        rewrite(conf, Files.readString(conf) + "\n" + settings + "\n");
    }

    PulsarClient client() throws Exception {
        return PulsarClient.builder().serviceUrl(serviceUrl())
                .operationTimeout(30, TimeUnit.SECONDS).build();
    }

    HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create(webServiceUrl() + path))
                .timeout(Duration.ofSeconds(30));
    }

    /** Publishes {@link #SENTINEL} to {@code topic}, for {@link #receiveUntilSentinel} after a restart. */
    static void publishSentinel(PulsarClient client, String topic) throws Exception {
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            producer.send(SENTINEL);
        }
    }

    /**
     * What the consumer gets before the sentinel published after the restart: everything redelivered, since the
     * sentinel comes after it. Waiting for the sentinel, not for a quiet period, shows that delivery works (an
     * empty result is not a broker that delivers nothing).
     */
    static List<String> receiveUntilSentinel(Consumer<String> consumer) throws Exception {
        List<String> before = new ArrayList<>();
        while (true) {
            Message<String> m = consumer.receive(60, TimeUnit.SECONDS);
            assertTrue(m != null, "the sentinel published after the restart was not delivered within 60 s");
            if (SENTINEL.equals(m.getValue())) {
                return before;
            }
            before.add(m.getValue());
        }
    }

    String get(String path) throws Exception {
        return HTTP.send(request(path).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    /** A POST or PUT of {@code json} (no body when null); returns the response. */
    HttpResponse<String> send(String method, String path, String json) throws Exception {
        HttpRequest.BodyPublisher body = json == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(json);
        return HTTP.send(request(path).header("Content-Type", "application/json").method(method, body).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    String log() throws IOException {
        return Files.readString(log);
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
