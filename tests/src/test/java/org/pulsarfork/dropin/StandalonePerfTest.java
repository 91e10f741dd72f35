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
import static org.testng.Assert.assertTrue;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Pulsar-perf side by side: upstream's 4.0.8 {@code bin/pulsar-perf} produces and consumes against a real
 * standalone with upstream's jars and with ours (installed by {@code bin/drop-in}), in one run with the same
 * settings. On 4.0.8 it is the distribution's {@code bin/pulsar standalone} and pulsar-perf runs from the broker's
 * home, so with ours it runs our client jar too. On 4.2.4 and 5.0.0-M1 the broker is the assembled home and
 * pulsar-perf runs from an unpacked 4.0.8 distribution of its own (pulsar-testclient 4.2.4 and 5.0.0-M1 are not on
 * Maven Central): the same client for both jar sets, so only the broker's jars differ. Each round measures both jar
 * sets, in alternating order so that drift of the machine is not read as a difference between them, each on a
 * broker started on empty disks (a round writes gigabytes; docs/drop-in.md); each jar set
 * runs a Shared subscription (two consumers racing: individual acks with holes) and an Exclusive one (acks in order, so
 * the mark-delete position moves with every ack, as cumulative acks move it: pulsar-perf 4.0.8 has no
 * cumulative-ack option). Printed per round: publish and consume rates, the publish latency percentiles (publish
 * to the broker's persisted answer) and the end-to-end ones (publish to receive), the ack rate, and cursor-ledger
 * writes per 1,000 acked messages (from the topic's internal stats). A measurement, not a gate: the only
 * assertions are that every run delivered what it published and that the tools ran. A long run only
 * ({@code -Dstandalone.perf=true}, README; results in docs/drop-in.md).
 */
@Test(groups = FORK_ONLY)
public class StandalonePerfTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SUBSCRIPTION = "perf";
    private static final String PUBLISH_RATE = System.getProperty("standalone.perf.publishRate", "1000000");
    private static final Pattern THROUGHPUT = Pattern.compile(
            "Aggregated throughput stats --- (\\d+) records (?:sent|received) --- ([\\d.]+) msg/s"
                    + "(?:.*?AckRate: ([\\d.]+)\\s+msg/s)?");
    private static final Pattern LATENCY = Pattern.compile(
            "Aggregated latency stats --- Latency: mean: +([\\d.]+) ms - med: +([\\d.]+) - 95pct: +([\\d.]+)"
                    + " - 99pct: +([\\d.]+)");
    private StandaloneHomes homes;
    // Where bin/pulsar-perf runs: null for the measured broker's own home (4.0.8).
    private Path client;

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        homes = StandaloneHomes.unpack("standalone-perf", "standalone.perf", false);
        // -Dstandalone.perf.separateClient=true: on 4.0.8 too, the client of upstream's distribution for both jar sets.
        if (!"4.0.8".equals(Commands.LINE) || Boolean.getBoolean("standalone.perf.separateClient")) {
            client = Commands.unpack408Distribution(homes.work().resolve("perf-client"));
        }
    }

    public void pulsarPerfSideBySide() throws Exception {
        // Even: each jar set runs first in half the rounds (the first run after a start is the slowest).
        int rounds = Integer.getInteger("standalone.perf.rounds", 4);
        int seconds = Integer.getInteger("standalone.perf.seconds", 45);
        String rate = System.getProperty("standalone.perf.markDeleteRate", "0.1");
        Map<String, Standalone> brokers = new LinkedHashMap<>();
        for (String jars : new String[] {"upstream", "ours"}) {
            Standalone broker = new Standalone(homes.home(jars));
            // standalone.conf limits mark-deletes to 0.1/s: what an operator of this distribution runs by default.
            broker.configure("managedLedgerDefaultMarkDeleteRateLimit=" + rate);
            brokers.put(jars, broker);
        }
        List<Result> results = new ArrayList<>();
        for (int round = 0; round < rounds; round++) {
            String[] order = round % 2 == 0 ? new String[] {"upstream", "ours"} : new String[] {"ours", "upstream"};
            for (String jars : order) {
                Standalone broker = brokers.get(jars);
                // Before the start, not after the kill: a failed round keeps its data for the post-mortem.
                broker.wipeData();
                broker.start();
                try {
                    for (String type : new String[] {"Shared", "Exclusive"}) {
                        Result r = measure(broker, jars, round, type, seconds);
                        System.out.println("[pulsar-perf 4.0.8, mark-delete limit " + rate + "/s] " + r);
                        results.add(r);
                    }
                } finally {
                    broker.kill9();
                }
            }
        }
        System.out.print(summary(results, rate, seconds, client != null
                ? "broker " + Commands.LINE + ", client: a 4.0.8 distribution of its own"
                : "broker 4.0.8 (server distribution), client: the broker's home"));
    }

    private Result measure(Standalone broker, String jars, int round, String type, int seconds)
            throws Exception {
        Run run = Run.of(broker, jars, round, type);
        // The subscription exists before the first message: the consumer gets everything published.
        int created = broker.send("PUT", run.path() + "/subscription/" + SUBSCRIPTION, null).statusCode();
        assertTrue(created == 204 || created == 200, "creating the subscription answered " + created);
        Files.createDirectories(run.logs());
        produceAndConsume(run, seconds);
        return result(run);
    }

    /** One measured run: a jar set, a round and a subscription type, on a topic and with logs of its own. */
    private record Run(Standalone broker, String jars, int round, String type, String topic, String path,
            Path logs) {
        static Run of(Standalone broker, String jars, int round, String type) {
            String topic = "persistent://public/default/perf-" + jars + "-" + round + "-" + type.toLowerCase();
            return new Run(broker, jars, round, type, topic, "/admin/v2/" + topic.replace("persistent://",
                    "persistent/"), broker.home().resolve("perf-logs"));
        }

        Path consumeLog() {
            return logs.resolve(jars + "-" + round + "-" + type + "-consume.log");
        }

        Path produceLog() {
            return logs.resolve(jars + "-" + round + "-" + type + "-produce.log");
        }
    }

    private void produceAndConsume(Run run, int seconds) throws Exception {
        Standalone broker = run.broker();
        // Shared: two consumers racing, so that acks arrive with holes; Exclusive: one, acking in order.
        Process consume = perf(broker, run.consumeLog(), "consume", "-u", broker.serviceUrl(), "-st", run.type(),
                "-ss", SUBSCRIPTION, "-n", "Shared".equals(run.type()) ? "2" : "1", "-i", "10", run.topic());
        // pulsar-perf 4.0.8 has no unthrottled mode (a rate of 0 makes its producer thread fail): a rate far above
        // what two cores publish.
        Process produce = perf(broker, run.produceLog(), "produce", "-u", broker.serviceUrl(), "-r", PUBLISH_RATE,
                "-s", "1024", "-time", String.valueOf(seconds), "-i", "10", run.topic());
        assertTrue(produce.waitFor(seconds + 120, TimeUnit.SECONDS), "pulsar-perf produce did not end");
        // The consumer stops once it has everything: its shutdown hook prints its totals.
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() ->
                JSON.readTree(broker.get(run.path() + "/stats")).path("subscriptions").path(SUBSCRIPTION)
                        .path("msgBacklog").asLong(-1) == 0);
        consume.destroy();
        assertTrue(consume.waitFor(60, TimeUnit.SECONDS), "pulsar-perf consume did not end");
    }

    private static Result result(Run run) throws Exception {
        Path produceLog = run.produceLog();
        Path consumeLog = run.consumeLog();
        String produced = Files.readString(produceLog);
        String consumed = Files.readString(consumeLog);
        Matcher pt = find(THROUGHPUT, produced, produceLog);
        Matcher pl = find(LATENCY, produced, produceLog);
        Matcher ct = find(THROUGHPUT, consumed, consumeLog);
        Matcher cl = find(LATENCY, consumed, consumeLog);
        JsonNode cursor = JSON.readTree(run.broker().get(run.path() + "/internalStats")).path("cursors")
                .path(SUBSCRIPTION);
        assertTrue(!produced.contains("Got error"), "pulsar-perf produce failed: " + produceLog);
        Result r = new Result(run.jars(), run.round(), run.type());
        r.sent = Long.parseLong(pt.group(1));
        assertTrue(r.sent > 0, "pulsar-perf produce sent nothing: " + produceLog);
        r.sendRate = number(pt.group(2));
        r.publishP50 = number(pl.group(2));
        r.publishP99 = number(pl.group(4));
        r.received = Long.parseLong(ct.group(1));
        r.receiveRate = number(ct.group(2));
        r.ackRate = ct.group(3) != null ? number(ct.group(3)) : Double.NaN;
        r.endToEndP99 = number(cl.group(4));
        r.cursorLedger = cursor.path("cursorLedger").asLong(-1);
        // Entries 0..last of the cursor ledger in use; a ledger switched during the run counts from its start.
        r.cursorLedgerWrites = cursor.path("cursorLedgerLastEntry").asLong(-1) + 1;
        r.markDelete = cursor.path("markDeletePosition").asText();
        // More than sent is redelivery, counted in the result as the net excess (upstream's Exclusive run of one
        // round received 18,433 more than sent). That a redelivery hides no loss is shown by the backlog of 0 awaited
        // above: the consumer acks what it receives, so every published message was acked. Fewer is a loss.
        assertTrue(r.received >= r.sent, run.jars() + " " + run.type() + ": consumed what was published ("
                + consumeLog + ")");
        return r;
    }

    private Process perf(Standalone broker, Path log, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add("bin/pulsar-perf");
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).directory((client != null ? client : broker.home())
                        .toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
        // The test's JVM, as the standalone of an assembled home runs on (Standalone#starter).
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        builder.environment().put("PULSAR_MEM", "-Xms128m -Xmx512m -XX:MaxDirectMemorySize=512m");
        builder.environment().put("PULSAR_GC_LOG", " ");
        builder.environment().put("LC_ALL", "C");
        return builder.start();
    }

    private static Matcher find(Pattern pattern, String text, Path log) {
        Matcher m = pattern.matcher(text);
        assertTrue(m.find(), "no '" + pattern.pattern() + "' in " + log);
        return m;
    }

    // pulsar-perf formats with the default locale: its processes run with LC_ALL=C (see perf).
    private static double number(String s) {
        return Double.parseDouble(s);
    }

    private static String summary(List<Result> results, String rate, int seconds, String setup) {
        StringBuilder out = new StringBuilder(String.format("[pulsar-perf 4.0.8] summary, %s, %d s per run,"
                + " mark-delete limit %s/s, ratios ours / upstream of the per-round means (min..max over rounds):%n",
                setup, seconds, rate));
        for (String type : new String[] {"Shared", "Exclusive"}) {
            Stats up = Stats.of(results, "upstream", type);
            Stats ours = Stats.of(results, "ours", type);
            out.append(String.format("  %-9s upstream: %s%n  %-9s ours:     %s%n  %-9s consume-rate ratio %.3f,"
                    + " publish-rate ratio %.3f, publish p99 %.1f / %.1f ms, end-to-end p99 %.1f / %.1f ms,"
                    + " cursor-ledger writes per 1,000 acks %.3f / %.3f%n", type, up, type, ours, type,
                    ours.receiveRate / up.receiveRate, ours.sendRate / up.sendRate, up.publishP99, ours.publishP99,
                    up.endToEndP99, ours.endToEndP99, up.writesPerThousand, ours.writesPerThousand));
            out.append(String.format("  %-9s consume-rate ratio per round:", type));
            for (Result u : results) {
                if (u.jars.equals("upstream") && u.type.equals(type)) {
                    results.stream().filter(o -> o.jars.equals("ours") && o.type.equals(type) && o.round == u.round)
                            .forEach(o -> out.append(String.format(" %.3f", o.receiveRate / u.receiveRate)));
                }
            }
            out.append(String.format("%n"));
        }
        return out.toString();
    }

    private static final class Result {
        final String jars;
        final int round;
        final String type;
        long sent;
        double sendRate;
        double publishP50;
        double publishP99;
        long received;
        double receiveRate;
        double ackRate;
        double endToEndP99;
        long cursorLedger;
        long cursorLedgerWrites;
        String markDelete;

        Result(String jars, int round, String type) {
            this.jars = jars;
            this.round = round;
            this.type = type;
        }

        @Override
        public String toString() {
            return String.format("%s jars, round %d, %s: sent %d at %.0f msg/s (publish p50 %.2f ms, p99 %.2f ms);"
                    + " received %d (%d redelivered) at %.0f msg/s, ack rate %.0f msg/s, end-to-end p99 %.0f ms;"
                    + " cursor ledger %d with %d writes (%.3f per 1,000 acks), mark-delete %s", jars, round, type,
                    sent, sendRate, publishP50, publishP99, received, received - sent, receiveRate, ackRate,
                    endToEndP99, cursorLedger,
                    cursorLedgerWrites, 1000.0 * cursorLedgerWrites / Math.max(1, received), markDelete);
        }
    }

    private static final class Stats {
        double sendRate;
        double receiveRate;
        double publishP99;
        double endToEndP99;
        double writesPerThousand;
        double minReceiveRate = Double.MAX_VALUE;
        double maxReceiveRate;
        int n;

        static Stats of(List<Result> results, String jars, String type) {
            Stats s = new Stats();
            for (Result r : results) {
                if (r.jars.equals(jars) && r.type.equals(type)) {
                    s.n++;
                    s.sendRate += r.sendRate;
                    s.receiveRate += r.receiveRate;
                    s.publishP99 += r.publishP99;
                    s.endToEndP99 += r.endToEndP99;
                    s.writesPerThousand += 1000.0 * r.cursorLedgerWrites / Math.max(1, r.received);
                    s.minReceiveRate = Math.min(s.minReceiveRate, r.receiveRate);
                    s.maxReceiveRate = Math.max(s.maxReceiveRate, r.receiveRate);
                }
            }
            int n = Math.max(1, s.n);
            s.sendRate /= n;
            s.receiveRate /= n;
            s.publishP99 /= n;
            s.endToEndP99 /= n;
            s.writesPerThousand /= n;
            return s;
        }

        @Override
        public String toString() {
            return String.format("%d rounds, publish %.0f msg/s, consume %.0f msg/s (%.0f..%.0f), publish p99 %.1f ms,"
                    + " end-to-end p99 %.1f ms, %.3f cursor-ledger writes per 1,000 acks", n, sendRate, receiveRate,
                    minReceiveRate, maxReceiveRate, publishP99, endToEndP99, writesPerThousand);
        }
    }
}
