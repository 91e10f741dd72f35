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
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.broker.BrokerTestUtil;
import org.apache.pulsar.broker.service.persistent.PersistentReplicator;
import org.apache.pulsar.client.admin.LongRunningProcessStatus;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
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
     * Replication after a release: well inside the pending resend's 25.6 s delay, with room for the remote's unload
     * and the replicator producer's reconnection on a loaded 2-core machine (an 8 s bound was missed once in CI).
     */
    private static final Duration RELEASE_BOUND = Duration.ofSeconds(20);

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
     * The remote refuses E3 for {@link #REFUSAL} (60 s in the long run): ours resends it with backoff within
     * {@code RefusalBounds}, E4 waits behind it, and E3, E4, E5 arrive in source order; upstream resends in a tight
     * loop.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 300_000)
    public void aLongRefusalIsResentWithBackoffAndArrivesInSourceOrder() throws Exception {
        refuseE3ThenLift(BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/backoff"));
    }

    /**
     * The operator's way out of a deterministic refusal (docs/geo-replication.md, "Releasing an entry the remote
     * refuses"), step by step, with what the operator sees: the held WARN and stats-internal name the position; the
     * remote has nothing from it; the operator gives the message up with {@code topics skip} on the replicator
     * cursor and unloads the topic on the remote (the remote's fence stays up otherwise). Replication resumes at
     * once, not after the rest of the backoff delay (51.2 s by then): E4 and E5 arrive in source order, E3 never,
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
            // Held long enough that the pending resend is 25.6 s away (the one after it, 51.2 s).
            await().atMost(WAIT).until(() -> replicator.getRetryBackoff().getNextDelayMillis() >= 51_200);

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

    /**
     * Replication resumes at once, not when the pending resend comes due (25.6 s after it was scheduled, which was
     * just before the release): within 20 s, a bound a resend that waited out its delay cannot meet.
     */
    private void releaseAndAwaitTheRest(String topic, Consumer<String> remote, List<String> onRemote)
            throws Exception {
        long released = System.nanoTime();
        admin1.topics().skipMessages(topic, "pulsar.repl." + cluster2, 1);
        admin2.topics().unload(topic);
        await().atMost(RELEASE_BOUND).until(() -> {
            receiveAvailable(remote, onRemote);
            return onRemote.size() >= 2 && replicationBacklog(topic) == 0;
        });
        long resumedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
        System.out.printf("[release] E4 and E5 on the remote %d ms after the release%n", resumedMillis);
        assertTrue(resumedMillis < RELEASE_BOUND.toMillis(), "resumed " + resumedMillis + " ms after the release");
    }
}
