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

import static org.apache.pulsar.broker.service.persistent.ReplicationGapHealer.GAP_PROPERTY_PREFIX;
import static org.awaitility.Awaitility.await;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import org.apache.pulsar.broker.BrokerTestUtil;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.intercept.BrokerInterceptor;
import org.apache.pulsar.broker.service.OneWayReplicatorTestBase;
import org.apache.pulsar.broker.service.ServerCnx;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.common.api.proto.BaseCommand;
import org.apache.pulsar.common.api.proto.ServerError;
import org.apache.pulsar.common.intercept.InterceptException;
import org.apache.pulsar.zookeeper.LocalBookkeeperEnsemble;
import org.apache.pulsar.zookeeper.ZookeeperServerTest;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * The report's timeline on two real clusters (#26113), deduplication on: the remote refuses E3 before its
 * dedup check (a topic-level maximum message size), stores E4 and E5, then the limit is lifted and the
 * resend of E3 is answered as a duplicate. Upstream completed it as persisted and deleted E3 on the
 * source: the replication backlog drained with E3 on neither side. The rule checked: while E3 has not
 * reached the remote, the source keeps it.
 */
public class GeoReplicationGapBenchTest extends OneWayReplicatorTestBase {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final Duration CLEANUP_WAIT = Duration.ofSeconds(90);

    @Override
    @BeforeClass(alwaysRun = true, timeOut = 300_000)
    public void setup() throws Exception {
        super.setup();
        // Before the replication client's first connection to cluster 2: a connection keeps the interceptor
        // the broker had when it was accepted.
        pulsar2.getBrokerService().setInterceptor(new HealGate());
    }

    @Override
    @AfterClass(alwaysRun = true, timeOut = 300_000)
    public void cleanup() throws Exception {
        HealGate.refuse(false);
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

    /** Cluster 2 refuses the gap healer's producers ({@code <replicator>.heal.<ledgerId>:<entryId>}) while asked. */
    static final class HealGate implements BrokerInterceptor {
        private static volatile boolean refusing;

        static void refuse(boolean refuse) {
            refusing = refuse;
        }

        @Override
        public void onPulsarCommand(BaseCommand command, ServerCnx cnx) throws InterceptException {
            if (refusing && command.getType() == BaseCommand.Type.PRODUCER
                    && command.getProducer().getProducerName().contains(".heal.")) {
                throw new InterceptException(ServerError.NotAllowedError.getValue(),
                        "the test refuses healing producers");
            }
        }

        @Override
        public void onConnectionClosed(ServerCnx cnx) {
        }

        @Override
        public void onWebserviceRequest(ServletRequest request) {
        }

        @Override
        public void onWebserviceResponse(ServletRequest request, ServletResponse response) {
        }

        @Override
        public void initialize(PulsarService pulsarService) {
        }

        @Override
        public void close() {
        }
    }

    @Override
    protected void setConfigDefaults(ServiceConfiguration config, String clusterName,
                                     LocalBookkeeperEnsemble bookkeeperEnsemble, ZookeeperServerTest zk) {
        super.setConfigDefaults(config, clusterName, bookkeeperEnsemble, zk);
        config.setBrokerDeduplicationEnabled(true);
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 240_000)
    public void aMessageTheRemoteRejectedStaysOnTheSourceUntilTheRemoteHasIt() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/gap");
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        admin2.topicPolicies().setMaxMessageSize(topic, 1024);
        await().atMost(WAIT).until(() -> Integer.valueOf(1024).equals(admin2.topicPolicies().getMaxMessageSize(topic)));

        try (Consumer<String> remote = client2.newConsumer(Schema.STRING).topic(topic).subscriptionName("check")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
             Producer<String> source = client1.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                     .create()) {
            source.send("E3:" + "x".repeat(4096));
            source.send("E4");
            source.send("E5");
            Set<String> onRemote = new HashSet<>();
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E4") && onRemote.contains("E5");
            });

            admin2.topicPolicies().removeMaxMessageSize(topic);
            // Upstream deletes E3 on the source within a few seconds of the duplicate receipt; the rule
            // must hold throughout.
            await().during(Duration.ofSeconds(15)).atMost(Duration.ofSeconds(20)).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E3") || replicationBacklog(topic) > 0;
            });
            assertTrue(onRemote.contains("E3") || replicationBacklog(topic) > 0,
                    "E3 left the source backlog without reaching the remote");
        }
    }

    /**
     * The same timeline, to its end: the duplicate receipt makes ours hand E3 to the gap healer, which
     * publishes it under a producer name of its own. While the remote's limit is in place that publish is
     * refused too and the gap is held; the held gap's next try (10 s later) after the limit is lifted
     * stores E3 on the remote, and only then does the source delete it. Upstream: E3 never arrives.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 240_000)
    public void aMessageTheRemoteRejectedOnceIsHealedAndTheBacklogDrains() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/heal");
        Set<String> onRemote = new HashSet<>();
        try (Consumer<String> remote = rejectE3AndStoreE4E5(topic, onRemote)) {
            admin2.topicPolicies().removeMaxMessageSize(topic);
            await("E3 stored on the remote, then deleted on the source").atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E3") && replicationBacklog(topic) == 0;
            });
        }
        // A resend already on its way through the replicator's producer may be stored after all while the
        // healer works on the gap: then the healer's own publish and delete finish after this point.
        await("the healer done with E3").atMost(WAIT).until(() -> gapMarkers(topic).isEmpty());
        long healed = GapHealerProbe.healed(pulsar1, topic, cluster2);
        long held = GapHealerProbe.held(pulsar1, topic, cluster2);
        System.out.printf("[measure] %s: gaps healed %d, held on the way %d%n", pulsarLine(), healed, held);
        // Seen once on 4.0.8: the remote stored the resend of E3 after the limit was lifted, with no duplicate
        // receipt before it, so there was no gap to heal. Otherwise exactly one gap, healed.
        assertTrue(healed == 1 || (healed == 0 && held == 0), "healed " + healed + ", held " + held);
    }

    /**
     * Healing fails deterministically (the remote refuses the healing producer, through {@link HealGate}):
     * the gap is held, written on the replicator cursor and counted. Unloading the topic (the replicator
     * and its producer start afresh, as after a broker restart) keeps it held: the new producer's duplicate
     * receipt for E3 must not turn into a deletion. Once the cause is gone, the next start heals it.
     */
    @Test(groups = FORK_ONLY, timeOut = 300_000)
    public void aGapThatCannotBeHealedIsHeldAcrossARestartUntilTheCauseIsGone() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/hold");
        Set<String> onRemote = new HashSet<>();
        try (Consumer<String> remote = rejectE3AndStoreE4E5(topic, onRemote)) {
            HealGate.refuse(true);
            admin2.topicPolicies().removeMaxMessageSize(topic);

            await().atMost(WAIT).until(() -> GapHealerProbe.held(pulsar1, topic, cluster2) == 1);
            Map<String, Long> markers = gapMarkers(topic);
            assertEquals(markers.size(), 1, "stats-internal shows the held gap: " + markers);
            assertEquals(markers.values().iterator().next(), Long.valueOf(1), "1 means held");

            restartReplicator(topic);
            await().atMost(WAIT).until(() -> GapHealerProbe.held(pulsar1, topic, cluster2) == 1);
            receiveAvailable(remote, onRemote);
            assertFalse(onRemote.contains("E3"));
            assertEquals(replicationBacklog(topic), 1, "E3 is still in the replication backlog");
            assertEquals(gapMarkers(topic), markers);

            HealGate.refuse(false);
            restartReplicator(topic);
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E3") && replicationBacklog(topic) == 0;
            });
            assertEquals(GapHealerProbe.healed(pulsar1, topic, cluster2), 1);
            assertTrue(gapMarkers(topic).isEmpty(), "released: " + gapMarkers(topic));
        }
    }

    /** The report's start: the remote refuses E3 (4 KB) by size before its dedup check, stores E4 and E5. */
    private Consumer<String> rejectE3AndStoreE4E5(String topic, Set<String> onRemote) throws Exception {
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        admin2.topicPolicies().setMaxMessageSize(topic, 1024);
        await().atMost(WAIT).until(() -> Integer.valueOf(1024).equals(admin2.topicPolicies().getMaxMessageSize(topic)));
        Consumer<String> remote = client2.newConsumer(Schema.STRING).topic(topic).subscriptionName("check")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
        try (Producer<String> source = client1.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            source.send("E3:" + "x".repeat(4096));
            source.send("E4");
            source.send("E5");
        }
        await().atMost(WAIT).until(() -> {
            receiveAvailable(remote, onRemote);
            return onRemote.contains("E4") && onRemote.contains("E5");
        });
        return remote;
    }

    /** Unloads the source topic and loads it again: a new replicator, a new producer, the same cursor. */
    private void restartReplicator(String topic) throws Exception {
        admin1.topics().unload(topic);
        pulsar1.getBrokerService().getTopic(topic, false).get(10, TimeUnit.SECONDS);
        waitReplicatorStarted(topic);
    }

    /** The gap markers stats-internal shows on the replicator cursor. */
    private Map<String, Long> gapMarkers(String topic) throws Exception {
        Map<String, Long> markers = new TreeMap<>();
        admin1.topics().getInternalStats(topic).cursors.forEach((name, cursor) -> {
            if (name.startsWith("pulsar.repl") && cursor.properties != null) {
                cursor.properties.forEach((key, value) -> {
                    if (key.startsWith(GAP_PROPERTY_PREFIX)) {
                        markers.put(key, value);
                    }
                });
            }
        });
        return markers;
    }

    private static String pulsarLine() {
        return System.getProperty("pulsar.line", "?");
    }

    private long replicationBacklog(String topic) throws Exception {
        return admin1.topics().getStats(topic).getReplication().get(cluster2).getReplicationBacklog();
    }

    private static void receiveAvailable(Consumer<String> consumer, Set<String> received) throws Exception {
        Message<String> msg;
        while ((msg = consumer.receive(100, TimeUnit.MILLISECONDS)) != null) {
            String value = msg.getValue();
            received.add(value.startsWith("E3:") ? "E3" : value);
            consumer.acknowledge(msg);
        }
    }
}
