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
import static org.pulsarfork.dropin.Commands.LINE;
import static org.pulsarfork.dropin.GeoAdmin.REJECTION_RECORD;
import static org.pulsarfork.dropin.GeoAdmin.expectOk;
import static org.pulsarfork.dropin.GeoAdmin.receiveAvailable;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.awaitility.core.ConditionTimeoutException;
import org.pulsarfork.bench.RefusalBounds;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Scenario d of docs/drop-in.md, in real broker processes: two standalones of one jar set as two clusters,
 * geo-replication from {@code cluster-a} to {@code cluster-b}, deduplication on both (#26113's set-up). The remote
 * refuses E3 by a topic-level maximum message size (1 KB) while E4 and E5 follow it; the source is killed
 * ({@code kill -9}) and restarted on its data while the remote still refuses E3, then the limit is lifted and E6
 * published.
 * Upstream's remote stores E4 and E5, answers the resend of E3 as a duplicate ({@code -1/-1}), and the source
 * deletes E3: it is on neither cluster. Ours (all three jars on both brokers, as {@code bin/drop-in} installs
 * them): the remote fences the replicator after the refusal and the source keeps E3, so the remote gets E1 to E6,
 * in source order, each once. What upstream loses is measured and printed, not asserted. A long run only
 * ({@code -Dstandalone.long=true}, README); the deterministic proofs are tests-broker's
 * {@code GeoReplicationFenceBenchTest} and {@code GeoReplicationGapBenchTest}. The other two scenarios, ours only and
 * without a kill, are their long refusal and the operator's release path, measured on every line.
 */
@Test(groups = FORK_ONLY)
public class StandaloneGeoReplicationTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String SOURCE = "cluster-a";
    private static final String REMOTE = "cluster-b";
    private static final String NAMESPACE = "geo/replicated";
    private static final String TOPIC = "persistent://" + NAMESPACE + "/gap";
    private static final String TOPIC_PATH = "/admin/v2/persistent/" + NAMESPACE + "/gap";
    private static final int REMOTE_MAX_MESSAGE_SIZE = 1024;
    private static final List<String> SENT = List.of("E1", "E2", "E3", "E4", "E5", "E6");
    private static final Pattern RETRY_ATTEMPTS =
            Pattern.compile("\"pulsar\\.replication\\.retry\\.attempts\\.[0-9:]+\"\\s*:\\s*(\\d+)");
    private static final Duration RELEASE_BOUND = Duration.ofSeconds(10);
    private static final Pattern HELD_SINCE =
            Pattern.compile("\"pulsar\\.replication\\.retry\\.heldSince\\.([0-9]+:[0-9]+)\"");
    // How long the long refusal lasts: the first minute, which docs/geo-replication.md states its bounds for.
    private static final Duration REFUSAL = Duration.ofSeconds(Long.getLong("geo.refusal.seconds", 60));
    private StandaloneHomes homes;

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        homes = StandaloneHomes.unpack("standalone-geo", "standalone.long", false);
    }

    public void aMessageTheRemoteRefusedOnceReachesItInSourceOrderOnOurs() throws Exception {
        Map<String, Outcome> outcomes = new TreeMap<>();
        for (String jars : new String[] {"upstream", "ours"}) {
            Outcome o = new Outcome();
            outcomes.put(jars, o);
            try {
                replicate(jars, o);
            } catch (Exception | AssertionError e) {
                if ("ours".equals(jars)) {
                    throw e;
                }
                // Upstream's outcome is measured, not asserted: a run that breaks down is reported as such.
                o.failure = e.toString();
            }
            System.out.printf("[standalone %s, %s jars] geo-replication, E3 refused by the remote, the source"
                    + " killed and restarted, E3 accepted: %s%n", LINE, jars, o);
        }
        Outcome ours = outcomes.get("ours");
        assertTrue(ours.refusalRecorded, "ours: the source recorded the refusal of E3 before the kill");
        assertFalse(ours.beforeKill.contains("E3"), "ours: the remote refused E3 before the kill");
        assertEquals(ours.onRemote, SENT, "ours: in source order, each once, nothing missing");
        assertEquals(ours.backlog, 0, "ours: the source's replication backlog drained");
    }

    /**
     * The long refusal of tests-broker's {@code GeoReplicationFenceBenchTest} in real processes, on every line (the
     * two-cluster test base has no 5.0.0-M1 build): ours only. The remote refuses E3 for {@link #REFUSAL}, E4 follows
     * at half of it, then the limit is lifted and E5 sent. From the source broker's log file (lines at INFO and
     * above naming the topic, attributes included) and its stats-internal, held to {@link RefusalBounds}: the
     * rewinds of the replicator cursor, the log lines, no ERROR, the resends; then E3, E4, E5 arrive in source
     * order, each once.
     */
    public void aLongRefusalIsResentWithBackoffAndBoundedLogsOnOurs() throws Exception {
        List<String> onRemote = new ArrayList<>();
        try (TwoClusters clusters = new TwoClusters(homes, "ours", "ours-long-").open()) {
            int logFrom = clusters.replicateE1ThenLimitTheRemote(onRemote);
            clusters.producer.send("E3:" + "x".repeat(4 * REMOTE_MAX_MESSAGE_SIZE));
            Duration half = REFUSAL.dividedBy(2);
            nothingMoreArrives(half, clusters.onRemote, onRemote);
            clusters.producer.send("E4");
            nothingMoreArrives(half, clusters.onRemote, onRemote);
            assertBoundedWhileHeld(new HeldTopicLog(clusters.source.log().substring(logFrom)),
                    retryAttempts(clusters.source));

            expectOk(clusters.remote.send("DELETE", TOPIC_PATH + "/maxMessageSize", null));
            clusters.producer.send("E5");
            await().atMost(WAIT.multipliedBy(2)).until(() -> {
                receiveAvailable(clusters.onRemote, onRemote);
                return onRemote.contains("E5") && replicationBacklog(clusters.source) == 0;
            });
            assertEquals(onRemote, List.of("E1", "E3", "E4", "E5"), "in source order, each once");
        }
    }

    /**
     * The operator's way out of a deterministic refusal (docs/geo-replication.md, "Releasing an entry the remote
     * refuses") in real processes, on every line, through the admin REST API: ours only. The held WARN in the
     * source's log (one, beside at most one other WARN naming the topic) and stats-internal name the position; the
     * operator skips it on the replicator cursor and unloads the topic on the remote (its fence). Replication resumes
     * at once, not after the rest of the backoff delay (25.6 s by then): E4 and E5 arrive in source order, E3 never,
     * the INFO says the message was skipped, the hold is gone from stats-internal, and E6 follows.
     */
    public void anOperatorReleasesARefusedMessageAndReplicationResumesInOrderOnOurs() throws Exception {
        List<String> onRemote = new ArrayList<>();
        try (TwoClusters clusters = new TwoClusters(homes, "ours", "ours-release-").open()) {
            Standalone source = clusters.source;
            int logFrom = clusters.replicateE1ThenLimitTheRemote(onRemote);
            String e3 = clusters.producer.send("E3:" + "x".repeat(4 * REMOTE_MAX_MESSAGE_SIZE)).toString();
            clusters.producer.send("E4");
            clusters.producer.send("E5");
            // The ninth resend is scheduled: the next one is 25.6 s away.
            await().atMost(WAIT).until(() -> retryAttempts(source) >= 9);

            // 1. What the operator sees: stats-internal and one WARN name the held position and the way out.
            String at = heldPositionAsTheOperatorSeesIt(source, e3, logFrom);
            // 2. The remote has nothing from E3 on: it is not there to copy, the operator gives it up.
            receiveAvailable(clusters.onRemote, onRemote);
            assertEquals(onRemote, List.of("E1"));
            assertEquals(replicationBacklog(source), 3);

            // 3. The release: skip E3 on the replicator cursor, unload the topic on the remote (its fence).
            releaseAndAwaitTheRest(clusters, at, onRemote);
            assertEquals(onRemote, List.of("E1", "E4", "E5"), "in source order, E3 given up");

            // 4. What the operator sees afterwards: the release logged, nothing held.
            assertFalse(source.get(TOPIC_PATH + "/internalStats").contains("pulsar.replication.retry."));
            assertTrue(linesAt(source.log().substring(logFrom), " INFO ").stream().anyMatch(line ->
                    line.contains("no longer held") && line.contains(at) && line.contains("skipped by an operator")),
                    "no INFO line says the held message was skipped");
            clusters.producer.send("E6");
            await().atMost(WAIT).until(() -> {
                receiveAvailable(clusters.onRemote, onRemote);
                return onRemote.contains("E6");
            });
            assertEquals(onRemote, List.of("E1", "E4", "E5", "E6"));
        }
    }

    // stats-internal's held position, checked to be E3's, and the one held WARN that names it and the way out.
    private static String heldPositionAsTheOperatorSeesIt(Standalone source, String e3, int logFrom)
            throws Exception {
        Matcher heldSince = HELD_SINCE.matcher(source.get(TOPIC_PATH + "/internalStats"));
        assertTrue(heldSince.find(), "stats-internal shows no held position");
        String at = heldSince.group(1);
        assertTrue(e3.startsWith(at + ":"), "E3 (" + e3 + ") is held, not " + at);
        // Besides it, at most the one-time note that refusals by the fence are recorded as ranges.
        List<String> warnings = linesAt(source.log().substring(logFrom), " WARN ");
        List<String> held = warnings.stream().filter(line -> line.contains("held at")).toList();
        assertTrue(held.size() == 1 && held.get(0).contains(at)
                && held.get(0).contains("'topics skip' on the replicator cursor"), warnings.toString());
        assertTrue(warnings.size() <= 2, warnings.toString());
        return at;
    }

    /**
     * Replication resumes at once, not when the pending resend comes due (25.6 s after it was scheduled, just before
     * the release): within 10 s, a bound a resend that waited out its delay cannot meet.
     */
    private static void releaseAndAwaitTheRest(TwoClusters clusters, String at, List<String> onRemote)
            throws Exception {
        long released = System.nanoTime();
        expectOk(clusters.source.send("POST", TOPIC_PATH + "/subscription/pulsar.repl." + REMOTE + "/skip/1", null));
        expectOk(clusters.remote.send("PUT", TOPIC_PATH + "/unload", null));
        await().atMost(RELEASE_BOUND).until(() -> {
            receiveAvailable(clusters.onRemote, onRemote);
            return onRemote.size() >= 3 && replicationBacklog(clusters.source) == 0;
        });
        long resumedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
        System.out.printf("[release standalone %s, ours] held at %s, released; E4 and E5 on the remote %d ms"
                + " later%n", LINE, at, resumedMillis);
        assertTrue(resumedMillis < RELEASE_BOUND.toMillis(), "resumed " + resumedMillis + " ms after the release");
    }

    // The log lines at the level that name the topic (the ledger name in the cursor's lines).
    private static List<String> linesAt(String log, String level) {
        return log.lines().filter(line -> line.contains(level) && line.contains("replicated/gap")).toList();
    }

    private static void assertBoundedWhileHeld(HeldTopicLog log, long attempts) {
        System.out.printf("[backoff standalone %s, ours] E3 refused for %d s: %d rewinds, %d resends of E3,"
                + " %d log lines naming the topic, %d ERROR lines%n", LINE, REFUSAL.toSeconds(), log.rewinds,
                attempts, log.lines, log.errors);
        RefusalBounds bounds = RefusalBounds.within(REFUSAL);
        assertTrue(log.rewinds <= bounds.maxRewinds() && log.rewinds >= bounds.minRewinds(),
                log.rewinds + " rewinds in " + REFUSAL);
        assertEquals(log.heldWarnings, 1, "one WARN says replication is held");
        assertTrue(log.lines <= bounds.maxLogLines(), log.lines + " log lines naming the topic in " + REFUSAL);
        assertTrue(attempts >= bounds.minAttempts() && attempts <= bounds.maxAttempts(),
                attempts + " resends of E3 in " + REFUSAL);
        assertEquals(log.errors, 0, "no ERROR for an expected refusal");
    }

    private static void nothingMoreArrives(Duration window, Consumer<String> remote, List<String> onRemote) {
        await().during(window).atMost(window.plusSeconds(10)).until(() -> {
            receiveAvailable(remote, onRemote);
            return onRemote.equals(List.of("E1"));
        });
    }

    // The resends of the held position, on the replicator cursor (broker: ReplicationRetryBackoff).
    private static long retryAttempts(Standalone source) throws Exception {
        Matcher attempts = RETRY_ATTEMPTS.matcher(source.get(TOPIC_PATH + "/internalStats"));
        return attempts.find() ? Long.parseLong(attempts.group(1)) : -1;
    }

    /**
     * The broker's lines at INFO and above that name the topic (the ledger name in the cursor's lines), the test's own
     * admin requests left out. The cursor logs "Rewind from X to Y" on 4.x and "Rewind {...}" with attributes on 5.x.
     */
    private static final class HeldTopicLog {
        private static final Pattern LEVEL = Pattern.compile("\\s(INFO|WARN|ERROR)\\s");
        private static final Pattern REWIND = Pattern.compile(" - (\\[[^]]*] )?Rewind( from |\\s*\\{)");
        int lines;
        int rewinds;
        int heldWarnings;
        int errors;

        HeldTopicLog(String text) {
            for (String line : text.split("\n")) {
                Matcher level = LEVEL.matcher(line);
                if (!level.find() || !(line.contains("replicated/gap") || line.contains("replicated/persistent/gap"))
                        || line.contains(TOPIC_PATH)) {
                    continue;
                }
                lines++;
                if (REWIND.matcher(line).find() && line.contains("pulsar.repl")) {
                    rewinds++;
                } else if ("WARN".equals(level.group(1)) && line.contains("held at")) {
                    heldWarnings++;
                } else if ("ERROR".equals(level.group(1))) {
                    errors++;
                }
            }
        }
    }

    /** What the remote received, and what the source still holds for it. */
    private static final class Outcome {
        final List<String> onRemote = new ArrayList<>();
        // What the remote had when the source was killed, and whether the source had recorded the refusal then.
        List<String> beforeKill = List.of();
        boolean refusalRecorded;
        boolean refusalSeen;
        long backlog = -1;
        boolean settled;
        String failure;

        List<String> missing() {
            List<String> missing = new ArrayList<>(SENT);
            missing.removeAll(onRemote);
            return missing;
        }

        @Override
        public String toString() {
            return String.format("before the kill the remote had %s (refusal %s, recorded on the source: %s);"
                            + " in the end the remote received %s, missing %s; source replication backlog %d%s%s",
                    beforeKill, refusalSeen ? "seen" : "not seen within " + WAIT, refusalRecorded, onRemote,
                    missing(), backlog, settled ? "" : " (not drained within " + WAIT + ")",
                    failure == null ? "" : "; the run broke down: " + failure);
        }
    }

    private void replicate(String jars, Outcome outcome) throws Exception {
        try (TwoClusters clusters = new TwoClusters(homes, jars, jars + "-").open()) {
            clusters.producer.send("E1");
            clusters.producer.send("E2");
            await().atMost(WAIT).until(() -> {
                receiveAvailable(clusters.onRemote, outcome.onRemote);
                return outcome.onRemote.contains("E2");
            });
            sendWhileTheRemoteRefusesE3(clusters.source, clusters.remote, clusters.producer, clusters.onRemote,
                    outcome);
            killTheSourceAndLiftTheLimit(clusters.source, clusters.remote);
            sendE6AndAwaitTheDrain(clusters.source, clusters.producer, clusters.onRemote, outcome);
        }
    }

    /**
     * Two standalones of one jar set as two clusters with the replicated topic, a producer on the source and a
     * consumer on the remote; closing kills both processes.
     */
    private static final class TwoClusters implements AutoCloseable {
        final Standalone source;
        final Standalone remote;
        private final List<AutoCloseable> opened = new ArrayList<>();
        Consumer<String> onRemote;
        Producer<String> producer;

        TwoClusters(StandaloneHomes homes, String jars, String folderPrefix) throws Exception {
            source = new Standalone(homes.home(jars, folderPrefix + SOURCE));
            remote = new Standalone(homes.home(jars, folderPrefix + REMOTE));
            source.configure("clusterName=" + SOURCE + "\nbrokerDeduplicationEnabled=true");
            remote.configure("clusterName=" + REMOTE + "\nbrokerDeduplicationEnabled=true");
        }

        TwoClusters open() throws Exception {
            try {
                startWithReplicatedTopic(source, remote);
                PulsarClient sourceClient = opened(source.client());
                PulsarClient remoteClient = opened(remote.client());
                onRemote = opened(remoteClient.newConsumer(Schema.STRING).topic(TOPIC).subscriptionName("check")
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe());
                producer = opened(sourceClient.newProducer(Schema.STRING).topic(TOPIC).enableBatching(false)
                        .create());
                return this;
            } catch (Exception | AssertionError e) {
                try {
                    close();
                } catch (Exception closing) {
                    e.addSuppressed(closing);
                }
                throw e;
            }
        }

        /**
         * E1 replicated, then the remote's topic-level maximum message size set: returns where the source's log
         * stands, for the lines logged from then on.
         */
        int replicateE1ThenLimitTheRemote(List<String> received) throws Exception {
            producer.send("E1");
            await().atMost(WAIT).until(() -> {
                receiveAvailable(onRemote, received);
                return received.contains("E1");
            });
            expectOk(remote.send("POST", TOPIC_PATH + "/maxMessageSize", String.valueOf(REMOTE_MAX_MESSAGE_SIZE)));
            await().atMost(WAIT).until(() -> limitOnRemote(remote));
            return source.log().length();
        }

        private <T extends AutoCloseable> T opened(T closeable) {
            opened.add(0, closeable);
            return closeable;
        }

        // Every client closed and both processes killed, whatever fails on the way; the first failure is thrown.
        @Override
        public void close() throws Exception {
            Exception failure = null;
            for (AutoCloseable closeable : opened) {
                try {
                    closeable.close();
                } catch (Exception e) {
                    failure = first(failure, e);
                }
            }
            opened.clear();
            try {
                source.kill9();
            } finally {
                remote.kill9();
            }
            if (failure != null) {
                throw failure;
            }
        }

        private static Exception first(Exception failure, Exception next) {
            if (failure == null) {
                return next;
            }
            failure.addSuppressed(next);
            return failure;
        }
    }

    private static void startWithReplicatedTopic(Standalone source, Standalone remote) throws Exception {
        source.start();
        remote.start();
        for (Standalone broker : List.of(source, remote)) {
            defineClusters(broker, source, remote);
        }
        expectOk(remote.send("PUT", TOPIC_PATH, null));
        expectOk(source.send("PUT", TOPIC_PATH, null));
    }

    private static void sendWhileTheRemoteRefusesE3(Standalone source, Standalone remote, Producer<String> producer,
            Consumer<String> onRemote, Outcome outcome) throws Exception {
        expectOk(remote.send("POST", TOPIC_PATH + "/maxMessageSize", String.valueOf(REMOTE_MAX_MESSAGE_SIZE)));
        await().atMost(WAIT).until(() -> limitOnRemote(remote));
        producer.send("E3:" + "x".repeat(4 * REMOTE_MAX_MESSAGE_SIZE));
        producer.send("E4");
        producer.send("E5");
        // The remote refused E3: upstream's has stored E4 and E5 by then, ours has recorded the refusal on
        // the source (and fenced the replicator on the remote).
        try {
            await().atMost(WAIT).until(() -> {
                receiveAvailable(onRemote, outcome.onRemote);
                outcome.refusalRecorded = source.get(TOPIC_PATH + "/internalStats").contains(REJECTION_RECORD);
                return outcome.onRemote.contains("E5") || outcome.refusalRecorded;
            });
            outcome.refusalSeen = true;
        } catch (ConditionTimeoutException e) {
            outcome.refusalSeen = false;
        }
        outcome.beforeKill = List.copyOf(outcome.onRemote);
    }

    private static void killTheSourceAndLiftTheLimit(Standalone source, Standalone remote) throws Exception {
        // The source process dies while the remote still refuses E3 and comes back on the same data: what
        // its replicator knew of the refusal in memory is gone (as when the topic moves to another broker).
        source.kill9();
        source.start();
        await().atMost(WAIT).ignoreExceptions().until(() -> source.send("GET", TOPIC_PATH + "/internalStats",
                null).statusCode() == 200);
        expectOk(remote.send("DELETE", TOPIC_PATH + "/maxMessageSize", null));
        await().atMost(WAIT).until(() -> !limitOnRemote(remote));
    }

    private static void sendE6AndAwaitTheDrain(Standalone source, Producer<String> producer,
            Consumer<String> onRemote, Outcome outcome) throws Exception {
        // E6 is replicated after E3's resend has been answered: once the remote has it and the source's
        // backlog is empty, the remote has all it will ever get. Upstream 4.0.8's replicator can stall
        // in a rewind loop instead (docs/bench.md): then what it has after WAIT is the outcome.
        producer.send("E6");
        try {
            await().atMost(WAIT).until(() -> {
                receiveAvailable(onRemote, outcome.onRemote);
                outcome.backlog = replicationBacklog(source);
                return outcome.onRemote.contains("E6") && outcome.backlog == 0;
            });
            outcome.settled = true;
        } catch (ConditionTimeoutException e) {
            outcome.settled = false;
        }
        receiveAvailable(onRemote, outcome.onRemote);
    }

    private static boolean limitOnRemote(Standalone remote) throws Exception {
        return remote.get(TOPIC_PATH + "/maxMessageSize").trim().equals(String.valueOf(REMOTE_MAX_MESSAGE_SIZE));
    }

    /**
     * Each standalone has a metadata store of its own: both clusters, the tenant and the replicated namespace are
     * defined on each.
     */
    private static void defineClusters(Standalone broker, Standalone source, Standalone remote) throws Exception {
        Standalone other = broker == source ? remote : source;
        GeoAdmin.replicate(broker::send, NAMESPACE, broker == source ? SOURCE : REMOTE,
                broker == source ? REMOTE : SOURCE, other.webServiceUrl(), other.serviceUrl());
    }

    private static long replicationBacklog(Standalone source) throws Exception {
        return GeoAdmin.replicationBacklog(source::send, TOPIC_PATH);
    }
}
