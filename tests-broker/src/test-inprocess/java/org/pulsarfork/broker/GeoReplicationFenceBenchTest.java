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
package org.pulsarfork.broker;

import static org.awaitility.Awaitility.await;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.bookkeeper.mledger.Position;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.pulsar.broker.BrokerTestUtil;
import org.apache.pulsar.broker.service.persistent.PersistentReplicator;
import org.apache.pulsar.broker.service.persistent.PersistentTopic;
import org.apache.pulsar.broker.service.persistent.ReplicationRetryBackoff;
import org.apache.pulsar.client.admin.LongRunningProcessStatus;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.common.naming.TopicName;
import org.pulsarfork.bench.BenchGroups;
import org.testng.annotations.Test;

/**
 * The report's timeline (#26113) with our remote: it refuses E3 before its dedup check (a topic-level maximum
 * message size) while E4 and E5 follow. Upstream's remote stores E4 and E5, its high-water mark passes E3, and
 * the resend of E3 after the limit is lifted is answered as a duplicate: E3 is deleted on the source and never
 * reaches the remote. Ours fences the replicator's producer at E3: E4 and E5 wait, and E3, E4, E5 arrive in
 * source order once E3 is accepted; nothing is held and the backlog drains.
 */
public class GeoReplicationFenceBenchTest extends GeoReplicationBenchBase {
    /**
     * The log lines naming the topic in its first minute held, stated in docs/geo-replication.md: per resend (nine
     * in the first minute) the cursor's rewind INFO and the client's send-error WARN, plus the WARN when it
     * becomes held.
     */
    static final int MAX_LOG_LINES_PER_MINUTE = 40;

    @Override
    protected boolean remoteFences() {
        return true;
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 240_000)
    public void aMessageRefusedOnceReachesTheRemoteInSourceOrder() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/fence");
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        limitRemoteMessageSize(topic);
        List<String> onRemote = new ArrayList<>();
        try (Consumer<String> remote = remoteConsumer(topic);
             Producer<String> source = sourceProducer(topic)) {
            source.send("E3:" + "x".repeat(4 * REMOTE_MAX_MESSAGE_SIZE));
            source.send("E4");
            source.send("E5");
            // The remote refused E3: upstream's has E4 and E5 by then, ours fenced the replicator's producer.
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return BenchGroups.onUpstream() ? onRemote.contains("E5") : remoteFencedProducers(topic) == 1;
            });
            if (!BenchGroups.onUpstream()) {
                // While E3 is refused, the replicator keeps sending E3, E4, E5: none of them passes.
                await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5)).until(() -> {
                    receiveAvailable(remote, onRemote);
                    return onRemote.isEmpty() && replicationBacklog(topic) >= 3;
                });
            }

            admin2.topicPolicies().removeMaxMessageSize(topic);
            // E6, published after the limit is lifted, is replicated after E3's resend has been answered: once the
            // remote has it and the source's backlog is empty, the remote has all it will ever get (upstream's
            // deleted E3 at the source on the duplicate receipt), without waiting out a bound for a message lost.
            source.send("E6");
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E6") && replicationBacklog(topic) == 0;
            });
            assertEquals(onRemote, List.of("E3", "E4", "E5", "E6"), "in source order, each once");
            if (!BenchGroups.onUpstream()) {
                assertEquals(remoteFencedProducers(topic), 0);
                await().atMost(WAIT).until(() -> rejectionMarkers(topic).isEmpty());
                assertTrue(rejectionMarkers(topic).isEmpty(), "nothing held: " + rejectionMarkers(topic));
            }
        }
    }

    /**
     * A chunked message whose first chunk the remote refuses once, a checksum error from one
     * bit flipped on the wire (the producer's copy intact, so the client resends everything pending while the
     * later chunks are already on their way). Ours: the fence keeps the later chunks out until the first one is
     * stored, and a consumer on the remote reads the whole message, then the next one. Upstream: the later
     * chunks are stored first, the first chunk's resend is dropped as a duplicate, and the message can never be
     * assembled on the remote (a consumer drops chunks out of order).
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 240_000)
    public void aChunkedMessageWhoseFirstChunkIsRefusedOnceIsReadWholeOnTheRemote() throws Exception {
        try (ChunkedScenario scenario = new ChunkedScenario()) {
            scenario.sendChunkedThenAfter();
            await().atMost(WAIT).until(() -> {
                scenario.receive();
                return scenario.onRemote.contains("after") && replicationBacklog(scenario.topic) == 0;
            });
            assertTrue(scenario.firstChunkCorrupted(), "the first chunk was corrupted on the wire");
            assertEquals(scenario.onRemote, List.of("chunked", "after"), "the whole chunked message, in order");
        }
    }

    /**
     * On a compacted remote topic, key K's v1 is refused once and v2 follows: the compacted
     * value is v2. (Upstream's remote gives v2 too, having dropped v1; the removed gap healer republished v1
     * after v2, and v1 won.) Ours also keeps v1 before v2 in the topic itself.
     */
    @Test(timeOut = 240_000)
    public void aKeyRefusedOnceDoesNotOverwriteItsNewerValueOnACompactedRemote() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/compacted");
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        limitRemoteMessageSize(topic);
        List<String> onRemote = new ArrayList<>();
        String v1 = "v1:" + "x".repeat(4 * REMOTE_MAX_MESSAGE_SIZE);
        try (Consumer<String> remote = remoteConsumer(topic);
             Producer<String> source = sourceProducer(topic)) {
            source.newMessage().key("K").value(v1).send();
            source.newMessage().key("K").value("v2").send();
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return BenchGroups.onUpstream() ? onRemote.contains("v2") : remoteFencedProducers(topic) == 1;
            });
            admin2.topicPolicies().removeMaxMessageSize(topic);
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return replicationBacklog(topic) == 0 && onRemote.contains("v2");
            });
        }
        if (!BenchGroups.onUpstream()) {
            assertEquals(onRemote, List.of("v1", "v2"), "in source order");
        }
        admin2.topics().triggerCompaction(topic);
        await().atMost(WAIT).until(() -> admin2.topics().compactionStatus(topic).status
                == LongRunningProcessStatus.Status.SUCCESS);
        Map<String, String> compacted = new HashMap<>();
        try (Reader<String> reader = client2.newReader(Schema.STRING).topic(topic).readCompacted(true)
                .startMessageId(MessageId.earliest).create()) {
            while (reader.hasMessageAvailable()) {
                Message<String> msg = reader.readNext(10, TimeUnit.SECONDS);
                if (msg != null) {
                    compacted.put(msg.getKey(), msg.getValue());
                }
            }
        }
        assertEquals(compacted, Map.of("K", "v2"));
    }

    /**
     * The remote refuses E3 for a minute (its topic-level maximum message size, lifted after the window).
     * Upstream rewinds and resends in a tight loop (thousands of rewinds a second, each with an ERROR and its stack
     * trace). Ours resends E3 with backoff (100 ms doubling): at most 12 rewinds of the replicator cursor and at
     * most {@link #MAX_LOG_LINES_PER_MINUTE} log lines naming the topic in the minute, no ERROR for the refusal;
     * E4, published during the refusal, waits behind E3; once the limit is lifted, E3, E4 and E5 arrive in source
     * order, none lost.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 300_000)
    public void aMessageRefusedForAMinuteIsResentWithBackoffAndArrivesInSourceOrder() throws Exception {
        // Upstream logs an ERROR with a stack trace per resend: a short window there.
        Duration half = BenchGroups.onUpstream() ? Duration.ofSeconds(3) : Duration.ofSeconds(30);
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/backoff");
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        limitRemoteMessageSize(topic);
        List<String> onRemote = new ArrayList<>();
        try (TopicLog log = TopicLog.ofBroker(topic);
             Consumer<String> remote = remoteConsumer(topic);
             Producer<String> source = sourceProducer(topic)) {
            source.send("E3:" + "x".repeat(4 * REMOTE_MAX_MESSAGE_SIZE));
            // E3 alone, refused for the first half of the window.
            awaitNothingArrives(half, remote, onRemote);
            int rewindsAlone = log.rewinds.get();
            // 100 ms doubling: resends at 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 12.7, 25.5 s, about 8 rewinds in 30 s.
            assertTrue(rewindsAlone <= 10, rewindsAlone + " rewinds of the replicator cursor in " + half);
            source.send("E4");
            awaitNothingArrives(half, remote, onRemote);
            PersistentReplicator replicator = replicator(topic);
            assertBoundedWhileHeld(log, replicator, rewindsAlone, half);
            assertHeldInStatsInternal(topic, replicator, 5);

            admin2.topicPolicies().removeMaxMessageSize(topic);
            source.send("E5");
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E5") && replicationBacklog(topic) == 0;
            });
            assertEquals(onRemote, List.of("E3", "E4", "E5"), "in source order, each once");
            assertFalse(replicator.getRetryBackoff().isHeld(), "resumed");
            assertEquals(log.errors.get(), 0, "no ERROR for an expected refusal");
        }
    }

    private void awaitNothingArrives(Duration window, Consumer<String> remote, List<String> onRemote) {
        await().during(window).atMost(window.plusSeconds(10)).until(() -> {
            receiveAvailable(remote, onRemote);
            return onRemote.isEmpty();
        });
    }

    // The two halves of the window: at 51.1 s one more rewind, about 9 in 60 s, then one a minute; E4 adds none
    // (it is not sent while E3 is refused).
    private static void assertBoundedWhileHeld(TopicLog log, PersistentReplicator replicator, int rewindsAlone,
                                               Duration half) {
        Duration window = half.multipliedBy(2);
        int rewindsInWindow = log.rewinds.get();
        int linesInWindow = log.lineCount.get();
        int attempts = replicator.getRetryBackoff().getAttempts();
        System.out.printf("[backoff] %s: %d rewinds in the first %d s, %d in %d s, %d resends of E3,"
                + " %d log lines naming the topic, %d ERROR lines%n", log.localName, rewindsAlone,
                half.toSeconds(), rewindsInWindow, window.toSeconds(), attempts, linesInWindow, log.errors.get());
        assertTrue(rewindsInWindow <= 12, rewindsInWindow + " rewinds of the replicator cursor in " + window);
        assertTrue(linesInWindow <= MAX_LOG_LINES_PER_MINUTE,
                linesInWindow + " log lines naming the topic in " + window);
        assertTrue(attempts >= 7 && attempts <= 10, attempts + " resends of E3 in " + window);
        assertEquals(log.errors.get(), 0, "no ERROR for an expected refusal");
    }

    // stats-internal shows the held position, since when and the resends on the replicator cursor.
    private String assertHeldInStatsInternal(String topic, PersistentReplicator replicator, int minAttempts)
            throws Exception {
        Position held = replicator.getRetryBackoff().getHeldPosition();
        String at = held.getLedgerId() + ":" + held.getEntryId();
        Map<String, Long> retry = retryMarkers(topic);
        assertEquals(retry.keySet(), Set.of(ReplicationRetryBackoff.HELD_SINCE_PREFIX + at,
                ReplicationRetryBackoff.ATTEMPTS_PREFIX + at), retry.toString());
        assertTrue(retry.get(ReplicationRetryBackoff.ATTEMPTS_PREFIX + at) >= minAttempts, retry.toString());
        return at;
    }

    private PersistentReplicator replicator(String topic) throws Exception {
        return (PersistentReplicator) ((PersistentTopic) pulsar1.getBrokerService().getTopic(topic, false)
                .get(10, TimeUnit.SECONDS).get()).getReplicators().get(cluster2);
    }

    /**
     * The operator's way out of a deterministic refusal (docs/geo-replication.md, "Releasing an entry the remote
     * refuses"), step by step, with what the operator sees: the held WARN and stats-internal name the position; the
     * remote has nothing from it; the operator gives the message up with {@code topics skip} on the replicator
     * cursor and unloads the topic on the remote (the remote's fence stays up otherwise). Replication resumes at
     * once, not after the rest of the backoff delay (25.6 s by then): E4 and E5 arrive in source order, E3 never,
     * the backlog drains and stats-internal no longer shows a held position.
     */
    @Test(groups = BenchGroups.FORK_ONLY, timeOut = 240_000)
    public void anOperatorReleasesAMessageTheRemoteRefusesAndReplicationResumesInOrder() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/release");
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        limitRemoteMessageSize(topic);
        List<String> onRemote = new ArrayList<>();
        try (TopicLog log = TopicLog.ofBackoff(topic);
             Consumer<String> remote = remoteConsumer(topic);
             Producer<String> source = sourceProducer(topic)) {
            MessageId e3 = source.send("E3:" + "x".repeat(4 * REMOTE_MAX_MESSAGE_SIZE));
            source.send("E4");
            source.send("E5");
            PersistentReplicator replicator = replicator(topic);
            // Held long enough that the next resend waits 25.6 s.
            await().atMost(WAIT).until(() -> replicator.getRetryBackoff().getNextDelayMillis() >= 25_600);

            // 1. What the operator sees: one WARN naming the position and the way out, and stats-internal.
            String at = assertHeldInStatsInternal(topic, replicator, 1);
            assertEquals(at, e3.toString().substring(0, at.length()), "E3 is held");
            assertEquals(log.lineCount.get(), 1, log.lines.toString());
            String warning = log.lines.get(0);
            assertTrue(warning.startsWith("WARN") && warning.contains("held at") && warning.contains(at)
                    && warning.contains("'topics skip' on the replicator cursor"), warning);
            // 2. The remote has nothing from E3 on: it is not there to copy, the operator gives it up.
            receiveAvailable(remote, onRemote);
            assertTrue(onRemote.isEmpty(), onRemote.toString());
            assertEquals(replicationBacklog(topic), 3L);

            // 3. The release: skip E3 on the replicator cursor, unload the topic on the remote (its fence).
            releaseAndAwaitTheRest(topic, remote, onRemote);
            assertEquals(onRemote, List.of("E4", "E5"), "in source order, E3 given up");

            // 4. What the operator sees afterwards: the release logged, nothing held.
            assertFalse(replicator.getRetryBackoff().isHeld());
            assertTrue(retryMarkers(topic).isEmpty(), retryMarkers(topic).toString());
            assertTrue(log.lines.stream().anyMatch(w -> w.startsWith("INFO") && w.contains("no longer held")
                    && w.contains(at) && w.contains("skipped by an operator")), log.lines.toString());
            source.send("E6");
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E6");
            });
            assertEquals(onRemote, List.of("E4", "E5", "E6"));
        }
    }

    // Replication resumes at once, not after the rest of the backoff delay (25.6 s by then).
    private void releaseAndAwaitTheRest(String topic, Consumer<String> remote, List<String> onRemote)
            throws Exception {
        long released = System.nanoTime();
        admin1.topics().skipMessages(topic, "pulsar.repl." + cluster2, 1);
        admin2.topics().unload(topic);
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            receiveAvailable(remote, onRemote);
            return onRemote.size() >= 2 && replicationBacklog(topic) == 0;
        });
        long resumedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
        assertTrue(resumedMillis < 25_600, "resumed " + resumedMillis + " ms after the release");
    }

    private Map<String, Long> retryMarkers(String topic) throws Exception {
        return replicatorCursorProperties(topic, "pulsar.replication.retry.");
    }

    /**
     * The log lines (level and text, attributes included: the 5.x structured logger puts the topic and the figures
     * there) that name one topic, from the moment it is opened until it is closed.
     */
    private static final class TopicLog extends AbstractAppender implements AutoCloseable {
        private final String localName;
        // The first lines, for the assertions that read them; upstream's loop logs thousands a second.
        private final List<String> lines = new CopyOnWriteArrayList<>();
        private final AtomicInteger lineCount = new AtomicInteger();
        private final AtomicInteger rewinds = new AtomicInteger();
        private final AtomicInteger errors = new AtomicInteger();
        private Runnable remove;

        private TopicLog(String topic) {
            super("topic-log", null, null, true, Property.EMPTY_ARRAY);
            this.localName = TopicName.get(topic).getLocalName();
            start();
        }

        // Every line of the broker and the replication client at INFO and above, the cursor's rewinds included.
        static TopicLog ofBroker(String topic) {
            TopicLog log = new TopicLog(topic);
            LoggerContext context = (LoggerContext) LogManager.getContext(false);
            Logger cursorLog = context.getLogger("org.apache.bookkeeper.mledger.impl.ManagedCursorImpl");
            Level cursorLevel = cursorLog.getLevel();
            context.getConfiguration().getRootLogger().addAppender(log, Level.INFO, null);
            context.updateLoggers();
            // After updateLoggers, which resets a level set on the logger itself.
            cursorLog.setLevel(Level.INFO);
            log.remove = () -> {
                context.getConfiguration().getRootLogger().removeAppender(log.getName());
                context.updateLoggers();
                cursorLog.setLevel(cursorLevel);
            };
            return log;
        }

        // The lines of the replication backoff only.
        static TopicLog ofBackoff(String topic) {
            TopicLog log = new TopicLog(topic);
            Logger backoffLog = ((LoggerContext) LogManager.getContext(false))
                    .getLogger(ReplicationRetryBackoff.class.getName());
            Level backoffLevel = backoffLog.getLevel();
            // After addAppender, which gives the logger a configuration of its own at its parent's level.
            backoffLog.addAppender(log);
            backoffLog.setLevel(Level.INFO);
            log.remove = () -> {
                backoffLog.removeAppender(log);
                backoffLog.setLevel(backoffLevel);
            };
            return log;
        }

        @Override
        public void append(LogEvent event) {
            String message = event.getMessage().getFormattedMessage() + " " + event.getContextData().toMap();
            if (!message.contains(localName)) {
                return;
            }
            if (lineCount.incrementAndGet() <= 1_000) {
                lines.add(event.getLevel() + " " + message);
            }
            if (message.contains("Rewind from") && message.contains("pulsar.repl")) {
                rewinds.incrementAndGet();
            } else if (event.getLevel().isMoreSpecificThan(Level.ERROR)) {
                errors.incrementAndGet();
            }
        }

        @Override
        public void close() {
            remove.run();
            stop();
        }
    }
}
