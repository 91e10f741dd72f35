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

import static org.apache.pulsar.broker.service.persistent.ReplicationRejections.PROPERTY_PREFIX;
import static org.awaitility.Awaitility.await;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.bookkeeper.mledger.Position;
import org.apache.pulsar.broker.BrokerTestUtil;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.service.OneWayReplicatorTestBase;
import org.apache.pulsar.broker.service.persistent.PersistentReplicator;
import org.apache.pulsar.broker.service.persistent.PersistentTopic;
import org.apache.pulsar.broker.service.persistent.ReplicationRetryBackoff;
import org.apache.pulsar.broker.service.persistent.ReplicatorPublishFences;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.InjectedClientCnxClientBuilder;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.impl.ClientBuilderImpl;
import org.apache.pulsar.client.impl.PulsarClientImpl;
import org.apache.pulsar.zookeeper.LocalBookkeeperEnsemble;
import org.apache.pulsar.zookeeper.ZookeeperServerTest;
import org.pulsarfork.bench.BenchGroups;
import org.pulsarfork.bench.RefusalBounds;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;

/**
 * Two real clusters from upstream's replication test base, deduplication on: the report's timeline (#26113)
 * starts with the remote refusing E3 by a topic-level maximum message size.
 */
public abstract class GeoReplicationBenchBase extends OneWayReplicatorTestBase {
    protected static final Duration WAIT = Duration.ofSeconds(60);
    private static final Duration CLEANUP_WAIT = Duration.ofSeconds(90);
    protected static final int REMOTE_MAX_MESSAGE_SIZE = 1024;
    protected static final int CHUNK_SIZE = 1024;
    /**
     * How long the long-refusal tests keep E3 refused: 8 s in CI; the first minute that docs/geo-replication.md
     * states its bounds for in the long run ({@code -Dgeo.refusal.seconds=60}, README).
     */
    protected static final Duration REFUSAL = Duration.ofSeconds(Long.getLong("geo.refusal.seconds", 8));

    /**
     * Whether the remote cluster runs our fence (our broker jar as it ships); false: it behaves as upstream's
     * remote does, the source side alone protects E3.
     */
    protected abstract boolean remoteFences();

    @Override
    @BeforeClass(alwaysRun = true, timeOut = 300_000)
    public void setup() throws Exception {
        super.setup();
    }

    @Override
    @AfterClass(alwaysRun = true, timeOut = 300_000)
    public void cleanup() throws Exception {
        // Upstream's two-cluster cleanup has hung once here for its whole 300 s, in BookKeeper's client close
        // (PerChannelBookieClient.closeInternal, on the upstream jars). The test verdicts are in by now and
        // the forked JVM ends with the class, so a hung close is reported, not turned into a failure.
        CompletableFuture<Void> closed = CompletableFuture.runAsync(() -> {
            try {
                super.cleanup();
            } catch (Exception e) {
                throw new CompletionException(e);
            }
        });
        try {
            closed.get(CLEANUP_WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            System.out.printf("[cleanup] the two clusters did not close within %d s; left to the JVM's exit%n",
                    CLEANUP_WAIT.toSeconds());
        }
    }

    @Override
    protected void setConfigDefaults(ServiceConfiguration config, String clusterName,
                                     LocalBookkeeperEnsemble bookkeeperEnsemble, ZookeeperServerTest zk) {
        super.setConfigDefaults(config, clusterName, bookkeeperEnsemble, zk);
        config.setBrokerDeduplicationEnabled(true);
        if (!remoteFences()) {
            // A broker.conf line; upstream's broker ignores it.
            config.getProperties().setProperty(ReplicatorPublishFences.ENABLED_PROPERTY, "false");
        }
    }

    /** The remote refuses messages above {@link #REMOTE_MAX_MESSAGE_SIZE} bytes on this topic from now on. */
    protected void limitRemoteMessageSize(String topic) throws Exception {
        admin2.topicPolicies().setMaxMessageSize(topic, REMOTE_MAX_MESSAGE_SIZE);
        await().atMost(WAIT).until(() -> Integer.valueOf(REMOTE_MAX_MESSAGE_SIZE)
                .equals(admin2.topicPolicies().getMaxMessageSize(topic)));
    }

    /**
     * The remote refuses E3 (by size) for {@link #REFUSAL}; E4 is published halfway, then the limit is lifted and E5
     * published. Ours resends E3 with backoff (100 ms doubling) within {@link RefusalBounds} (rewinds of the
     * replicator cursor, log lines naming the topic at INFO and above on any logger, resends), logs no ERROR,
     * shows the hold in stats-internal, keeps E4 behind E3, and E3, E4, E5 arrive in source order, each once.
     * Upstream rewinds and resends in a tight loop, each resend with an ERROR and its stack trace: it gets a 3 s
     * window.
     */
    protected void refuseE3ThenLift(String topic) throws Exception {
        Duration half = BenchGroups.onUpstream() ? Duration.ofSeconds(3) : REFUSAL.dividedBy(2);
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        limitRemoteMessageSize(topic);
        List<String> onRemote = new ArrayList<>();
        try (TopicLog log = TopicLog.ofBroker(topic);
             Consumer<String> remote = remoteConsumer(topic);
             Producer<String> source = sourceProducer(topic)) {
            source.send("E3:" + "x".repeat(4 * REMOTE_MAX_MESSAGE_SIZE));
            awaitNothingArrives(half, remote, onRemote);
            int rewindsAlone = log.rewinds.get();
            assertTrue(rewindsAlone <= RefusalBounds.within(half).maxRewinds(),
                    rewindsAlone + " rewinds of the replicator cursor in " + half);
            source.send("E4");
            awaitNothingArrives(half, remote, onRemote);
            PersistentReplicator replicator = replicator(topic);
            assertBoundedWhileHeld(log, replicator, rewindsAlone, half);
            assertHeldInStatsInternal(topic, replicator, RefusalBounds.within(half.multipliedBy(2)).minAttempts());

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

    private static void assertBoundedWhileHeld(TopicLog log, PersistentReplicator replicator, int rewindsAlone,
                                               Duration half) {
        Duration window = half.multipliedBy(2);
        RefusalBounds bounds = RefusalBounds.within(window);
        int rewindsInWindow = log.rewinds.get();
        int linesInWindow = log.lineCount.get();
        int attempts = replicator.getRetryBackoff().getAttempts();
        System.out.printf("[backoff] %s: %d rewinds in the first %d s, %d in %d s, %d resends of E3,"
                + " %d log lines naming the topic, %d ERROR lines%n", log.localName, rewindsAlone,
                half.toSeconds(), rewindsInWindow, window.toSeconds(), attempts, linesInWindow, log.errors.get());
        assertTrue(rewindsInWindow <= bounds.maxRewinds() && rewindsInWindow >= bounds.minRewinds(),
                rewindsInWindow + " rewinds of the replicator cursor in " + window);
        assertTrue(linesInWindow <= bounds.maxLogLines(), linesInWindow + " log lines naming the topic in " + window);
        assertTrue(attempts >= bounds.minAttempts() && attempts <= bounds.maxAttempts(),
                attempts + " resends of E3 in " + window);
        assertEquals(log.errors.get(), 0, "no ERROR for an expected refusal");
    }

    // stats-internal shows the held position, since when and the resends on the replicator cursor.
    protected String assertHeldInStatsInternal(String topic, PersistentReplicator replicator, int minAttempts)
            throws Exception {
        Position held = replicator.getRetryBackoff().getHeldPosition();
        String at = held.getLedgerId() + ":" + held.getEntryId();
        Map<String, Long> retry = retryMarkers(topic);
        assertEquals(retry.keySet(), Set.of(ReplicationRetryBackoff.HELD_SINCE_PREFIX + at,
                ReplicationRetryBackoff.ATTEMPTS_PREFIX + at), retry.toString());
        assertTrue(retry.get(ReplicationRetryBackoff.ATTEMPTS_PREFIX + at) >= minAttempts, retry.toString());
        return at;
    }

    protected PersistentReplicator replicator(String topic) throws Exception {
        return (PersistentReplicator) ((PersistentTopic) pulsar1.getBrokerService().getTopic(topic, false)
                .get(10, TimeUnit.SECONDS).get()).getReplicators().get(cluster2);
    }

    protected Map<String, Long> retryMarkers(String topic) throws Exception {
        return replicatorCursorProperties(topic, "pulsar.replication.retry.");
    }

    /**
     * From now on the source broker replicates to the remote through a client whose connections {@code cnxFactory}
     * makes (for topics whose replicator starts after this call). Returns the step that puts the broker's own
     * client back.
     */
    protected Runnable replicateThrough(InjectedClientCnxClientBuilder.ClientCnxFactory cnxFactory)
            throws Exception {
        Map<String, PulsarClient> clients = pulsar1.getBrokerService().getReplicationClients();
        PulsarClientImpl injected = InjectedClientCnxClientBuilder.create(
                (ClientBuilderImpl) PulsarClient.builder().serviceUrl(url2.toString()), cnxFactory);
        PulsarClient previous = clients.put(cluster2, injected);
        return () -> {
            if (previous == null) {
                clients.remove(cluster2, injected);
            } else {
                clients.replace(cluster2, injected, previous);
            }
            injected.closeAsync();
        };
    }

    /** A consumer on the remote topic, from its earliest message. */
    protected Consumer<String> remoteConsumer(String topic) throws Exception {
        return client2.newConsumer(Schema.STRING).topic(topic).subscriptionName("check")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    }

    /** A producer on the source topic, one message per entry. */
    protected Producer<String> sourceProducer(String topic) throws Exception {
        return client1.newProducer(Schema.STRING).topic(topic).enableBatching(false).create();
    }

    /** The rejection records stats-internal shows on the source's replicator cursor. */
    protected Map<String, Long> rejectionMarkers(String topic) throws Exception {
        return replicatorCursorProperties(topic, PROPERTY_PREFIX);
    }

    /** The properties starting with {@code prefix} that stats-internal shows on the source's replicator cursor. */
    protected Map<String, Long> replicatorCursorProperties(String topic, String prefix) throws Exception {
        Map<String, Long> markers = new TreeMap<>();
        admin1.topics().getInternalStats(topic).cursors.forEach((name, cursor) -> {
            if (name.startsWith("pulsar.repl") && cursor.properties != null) {
                cursor.properties.forEach((key, value) -> {
                    if (key.startsWith(prefix)) {
                        markers.put(key, value);
                    }
                });
            }
        });
        return markers;
    }

    /** The remote topic's fenced replicator producers (ours only). */
    protected int remoteFencedProducers(String topic) throws Exception {
        return ((PersistentTopic) pulsar2.getBrokerService().getTopic(topic, false).get(10, TimeUnit.SECONDS)
                .get()).getMessageDeduplication().getReplicatorFences().size();
    }

    /**
     * Waits while {@code rule} holds for 4 s, and fails at the first check where it does not: a message the source
     * deleted without the remote having it does not come back, so upstream's breach is reported when it happens
     * (within a second of the remote's receipt in every run), not after the window's bound.
     */
    protected static void holdsThroughout(String breach, Callable<Boolean> rule) {
        await().failFast(breach, () -> !rule.call()).during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(8))
                .until(rule);
    }

    protected long replicationBacklog(String topic) throws Exception {
        return admin1.topics().getStats(topic).getReplication().get(cluster2).getReplicationBacklog();
    }

    /**
     * The chunked-message tests' set-up: the source replicates a new topic through a connection that flips a bit of the
     * first chunk of a chunked message once ({@link FirstChunkCorruptingClientCnx}); a consumer on the remote.
     */
    protected final class ChunkedScenario implements AutoCloseable {
        final String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/chunked");
        final String chunked = "C:" + "x".repeat(3 * CHUNK_SIZE);
        /** What the remote consumer received, the chunked message as "chunked". */
        final List<String> onRemote = new ArrayList<>();
        private final AtomicBoolean corrupted = new AtomicBoolean();
        private final Runnable restoreClient;
        private final Consumer<String> remote;

        ChunkedScenario() throws Exception {
            restoreClient = replicateThrough(
                    (conf, eventLoopGroup) -> new FirstChunkCorruptingClientCnx(conf, eventLoopGroup, corrupted));
            try {
                admin1.topics().createNonPartitionedTopic(topic);
                waitReplicatorStarted(topic);
                remote = client2.newConsumer(Schema.STRING).topic(topic).subscriptionName("check")
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
            } catch (Exception e) {
                restoreClient.run();
                throw e;
            }
        }

        /** Publishes the chunked message ({@link #CHUNK_SIZE} chunks), then the message "after". */
        void sendChunkedThenAfter() throws Exception {
            try (Producer<String> source = client1.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                    .enableChunking(true).chunkMaxMessageSize(CHUNK_SIZE).create()) {
                source.send(chunked);
                source.send("after");
            }
        }

        /** Receives what the remote has now, acknowledging it. */
        void receive() throws Exception {
            Message<String> msg;
            while ((msg = remote.receive(100, TimeUnit.MILLISECONDS)) != null) {
                onRemote.add(chunked.equals(msg.getValue()) ? "chunked" : msg.getValue());
                remote.acknowledge(msg);
            }
        }

        boolean firstChunkCorrupted() {
            return corrupted.get();
        }

        @Override
        public void close() throws Exception {
            try {
                remote.close();
            } finally {
                restoreClient.run();
            }
        }
    }

    /** Receives what is there now, acknowledging it; the large values count by their prefix ("E3", "v1"). */
    protected static void receiveAvailable(Consumer<String> consumer, Collection<String> received)
            throws Exception {
        Message<String> msg;
        while ((msg = consumer.receive(100, TimeUnit.MILLISECONDS)) != null) {
            String value = msg.getValue();
            received.add(value.startsWith("E3:") ? "E3" : value.startsWith("v1:") ? "v1" : value);
            consumer.acknowledge(msg);
        }
    }
}
