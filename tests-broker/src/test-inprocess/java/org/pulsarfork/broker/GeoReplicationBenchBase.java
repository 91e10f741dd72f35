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
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pulsar.broker.BrokerTestUtil;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.service.OneWayReplicatorTestBase;
import org.apache.pulsar.broker.service.persistent.PersistentTopic;
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
     * Waits while {@code rule} holds for 15 s, and fails at the first check where it does not: a message the source
     * deleted without the remote having it does not come back, so upstream's breach is reported when it happens,
     * not after the window's bound.
     */
    protected static void holdsThroughout(String breach, Callable<Boolean> rule) {
        await().failFast(breach, () -> !rule.call()).during(Duration.ofSeconds(15)).atMost(Duration.ofSeconds(20))
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
