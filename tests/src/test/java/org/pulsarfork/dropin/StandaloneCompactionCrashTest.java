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
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.dropin.Commands.REPO;
import static org.pulsarfork.dropin.Commands.hardLinkedCopy;
import static org.pulsarfork.dropin.Commands.rewrite;
import static org.pulsarfork.dropin.Commands.run;
import static org.pulsarfork.dropin.Commands.stageOurJars;
import static org.pulsarfork.dropin.Commands.unpackServerDistribution;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertTrue;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Issue 12, scenario b, in real broker processes: upstream's 4.0.8 server distribution run as
 * {@code bin/pulsar standalone}, once with upstream's jars and once with ours installed by {@code bin/drop-in}.
 * Two compactions inside one mark-delete limiter period (standalone.conf: 0.1/s), the previous compacted ledger
 * deleted, then {@code kill -9} and a restart on the same data: the compacted view must hold the latest value of
 * every key. Upstream completed the throttled compaction ack without writing it (#26484): the restarted broker
 * recovers a compaction cursor naming the deleted ledger.
 */
@Test(groups = FORK_ONLY)
public class StandaloneCompactionCrashTest {
    private static final int KEYS = 3;
    private static final Duration START = Duration.ofSeconds(180);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final Duration READABLE = Duration.ofSeconds(60);
    private static final Pattern COMPACTED_LEDGER =
            Pattern.compile("\"compactedLedger\"\\s*:\\s*\\{[^}]*?\"ledgerId\"\\s*:\\s*(-?\\d+)");
    private static final Pattern STATUS = Pattern.compile("\"status\"\\s*:\\s*\"(\\w+)\"");
    // CompactedTopicImpl logs this at debug once it deleted the previous compacted ledger; the test's log
    // configuration turns that logger on.
    private static final String PREVIOUS_LEDGER_DELETED = "Compacted topic ledger deleted successfully";

    private final HttpClient http = HttpClient.newHttpClient();
    private Path work;
    private Path dist;
    private Path pristine;

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        if (!Boolean.parseBoolean(System.getProperty("standalone.crash", "true"))) {
            throw new SkipException("left out: -Dstandalone.crash=false");
        }
        work = REPO.resolve("tests/target/standalone-test");
        run(REPO, "rm", "-rf", work.toString());
        Files.createDirectories(work);
        pristine = unpackServerDistribution(work);
        if (pristine == null) {
            throw new SkipException("only 4.0.8 publishes a server distribution (docs/bench.md)");
        }
        dist = stageOurJars(work);
    }

    public void aKill9AfterTwoCompactionsInOneLimiterPeriodKeepsTheCompactedViewOnOurs() throws Exception {
        Map<String, String> upstream = compactTwiceKillAndRestart("upstream");
        Map<String, String> ours = compactTwiceKillAndRestart("ours");
        Map<String, String> latest = Map.of("k0", "v2-9", "k1", "v2-7", "k2", "v2-8");
        System.out.printf("[standalone 4.0.8] compacted view after kill -9 and restart: upstream %s, ours %s%n",
                upstream, ours);
        assertEquals(ours, latest, "ours: the compacted view after the restart");
        assertNotEquals(upstream, latest, "upstream: expected the compacted view broken after the restart (#26484)");
    }

    /** The scenario on one jar set; returns the compacted view the restarted broker serves (key to value). */
    private Map<String, String> compactTwiceKillAndRestart(String jars) throws Exception {
        Path home = hardLinkedCopy(pristine, work.resolve(jars));
        if ("ours".equals(jars)) {
            run(REPO, "bin/drop-in", "install", home.toString(), "--dist", dist.toString());
            run(REPO, "bin/drop-in", "verify", home.toString(), "--dist", dist.toString());
        }
        Standalone broker = new Standalone(home);
        String topic = "compacted-" + jars;
        try {
            broker.start();
            try (PulsarClient client = broker.client()) {
                publish(client, topic, "v1");
                long first = compact(broker, topic, -1);
                publish(client, topic, "v2");
                long second = compact(broker, topic, first);
                await().atMost(WAIT).until(() -> broker.log().contains(PREVIOUS_LEDGER_DELETED));
                System.out.printf("[standalone 4.0.8, %s jars] compacted ledgers %d then %d; the first deleted%n",
                        jars, first, second);
            }
            broker.kill9();
            broker.start();
            try (PulsarClient client = broker.client()) {
                Map<String, String> view = compactedViewOnceReadable(client, topic);
                // A broken view counts only from a broker that stores and reads: a new topic's message, read back.
                assertWritesAndReads(client, "health-" + jars);
                return view;
            }
        } finally {
            broker.kill9();
        }
    }

    private static void assertWritesAndReads(PulsarClient client, String topic) throws Exception {
        try (Reader<String> reader = client.newReader(Schema.STRING).topic(topic).startMessageId(MessageId.earliest)
                .create();
             Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).create()) {
            producer.send("probe");
            Message<String> read = reader.readNext(30, TimeUnit.SECONDS);
            assertTrue(read != null && "probe".equals(read.getValue()), "the restarted broker does not read back");
        }
    }

    private static void publish(PulsarClient client, String topic, String value) throws Exception {
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            for (int i = 0; i < 10; i++) {
                producer.newMessage().key("k" + (i % KEYS)).value(value + "-" + i).send();
            }
        }
    }

    private long compact(Standalone broker, String topic, long previous) throws Exception {
        String path = "/admin/v2/persistent/public/default/" + topic;
        HttpResponse<String> triggered = http.send(broker.request(path + "/compaction")
                .PUT(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(triggered.statusCode() / 100, 2, triggered.body());
        long[] compacted = {-1};
        await().atMost(WAIT).until(() -> {
            String status = get(broker, path + "/compaction");
            assertTrue(!status.contains("\"ERROR\""), "compaction failed: " + status);
            Matcher ledger = COMPACTED_LEDGER.matcher(get(broker, path + "/internalStats"));
            compacted[0] = ledger.find() ? Long.parseLong(ledger.group(1)) : -1;
            Matcher state = STATUS.matcher(status);
            return state.find() && "SUCCESS".equals(state.group(1)) && compacted[0] != -1 && compacted[0] != previous;
        });
        return compacted[0];
    }

    private String get(Standalone broker, String path) throws Exception {
        return http.send(broker.request(path).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    /**
     * The compacted view, read again while reads fail or find nothing (the restarted broker may still be loading
     * the topic; with the RocksDB metadata store its reads also failed with "bookie is unknown"). A view that
     * stays unreadable for {@link #READABLE} is returned as it is.
     */
    private static Map<String, String> compactedViewOnceReadable(PulsarClient client, String topic) throws Exception {
        long deadline = System.nanoTime() + READABLE.toNanos();
        Map<String, String> view;
        do {
            view = compactedView(client, topic);
        } while ((view.isEmpty() || view.containsKey("error")) && System.nanoTime() < deadline);
        return view;
    }

    /** Everything a compacted reader gets from the start; an unreadable view yields fewer keys. */
    private static Map<String, String> compactedView(PulsarClient client, String topic) throws Exception {
        Map<String, String> view = new TreeMap<>();
        try (Reader<String> reader = client.newReader(Schema.STRING).topic(topic).readCompacted(true)
                .startMessageId(MessageId.earliest).create()) {
            Message<String> message;
            while ((message = reader.readNext(10, TimeUnit.SECONDS)) != null) {
                view.merge(message.getKey(), message.getValue(), (older, newer) -> older + "," + newer);
            }
        } catch (Exception e) {
            view.put("error", e.getClass().getSimpleName());
        }
        return view;
    }

    /** One {@code bin/pulsar standalone} on loopback ports of its own, its data and log in its home. */
    private static final class Standalone {
        private final Path home;
        private final int brokerPort;
        private final int webPort;
        private final int bookiePort;
        private final int zkPort;
        private final Path log;
        private Process process;

        Standalone(Path home) throws Exception {
            this.home = home;
            this.brokerPort = freePort();
            this.webPort = freePort();
            this.bookiePort = freePort();
            this.zkPort = freePort();
            this.log = home.resolve("standalone.log");
            Path conf = home.resolve("conf/standalone.conf");
            rewrite(conf, Files.readString(conf)
                    .replaceAll("(?m)^bindAddress=.*$", "bindAddress=127.0.0.1")
                    .replaceAll("(?m)^advertisedAddress=.*$", "advertisedAddress=127.0.0.1")
                    .replaceAll("(?m)^brokerServicePort=.*$", "brokerServicePort=" + brokerPort)
                    .replaceAll("(?m)^webServicePort=.*$", "webServicePort=" + webPort)
                    // The embedded bookie listens on all interfaces otherwise.
                    + "\nlisteningInterface=lo\n");
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
            ProcessBuilder builder = new ProcessBuilder("bin/pulsar", "standalone", "-nfw", "-nss",
                    "--bookkeeper-port", String.valueOf(bookiePort), "--zookeeper-port", String.valueOf(zkPort),
                    "--bookkeeper-dir", "data/standalone/bookkeeper", "--zookeeper-dir", "data/standalone/zookeeper")
                    .directory(home.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
            // ZooKeeper, not the default RocksDB metadata store: with RocksDB the restarted standalone found the
            // killed process's bookie registration and re-registered in a loop, its reads failing at random;
            // a ZooKeeper session of the killed process expires and takes its registration with it.
            builder.environment().put("PULSAR_STANDALONE_USE_ZOOKEEPER", "1");
            builder.environment().put("PULSAR_LOG_APPENDER", "Console");
            builder.environment().put("PULSAR_MEM", "-Xms256m -Xmx1g -XX:MaxDirectMemorySize=512m");
            builder.environment().put("PULSAR_GC_LOG", " ");
            process = builder.start();
            await().atMost(START).pollInterval(Duration.ofSeconds(1)).ignoreExceptions().until(() -> {
                assertTrue(process.isAlive(), "standalone exited; see " + log);
                return HttpClient.newHttpClient().send(request("/admin/v2/namespaces/public/default").GET().build(),
                        HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
            });
        }

        /** SIGKILL: no shutdown hook, no cursor flush. */
        void kill9() throws Exception {
            if (process != null && process.isAlive()) {
                process.destroyForcibly();
                assertTrue(process.waitFor(60, TimeUnit.SECONDS), "standalone did not die");
            }
        }

        PulsarClient client() throws Exception {
            return PulsarClient.builder().serviceUrl("pulsar://127.0.0.1:" + brokerPort)
                    .operationTimeout(30, TimeUnit.SECONDS).build();
        }

        HttpRequest.Builder request(String path) {
            return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + webPort + path))
                    .timeout(Duration.ofSeconds(30));
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
}
