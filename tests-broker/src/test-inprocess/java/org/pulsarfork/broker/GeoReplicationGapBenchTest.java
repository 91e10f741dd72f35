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
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import io.netty.buffer.ByteBuf;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerImpl;
import org.apache.bookkeeper.mledger.impl.MetaStore;
import org.apache.pulsar.broker.BrokerTestUtil;
import org.apache.pulsar.broker.service.BrokerService;
import org.apache.pulsar.broker.service.persistent.ReplicationRejections;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.impl.ClientCnx;
import org.apache.pulsar.client.impl.MessageIdImpl;
import org.apache.pulsar.client.impl.metrics.InstrumentProvider;
import org.apache.pulsar.common.api.proto.BaseCommand;
import org.apache.pulsar.common.protocol.Commands;
import org.awaitility.core.ConditionTimeoutException;
import org.pulsarfork.bench.BenchGroups;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * The report's timeline on two real clusters (#26113), deduplication on: the remote refuses E3 before its
 * dedup check (a topic-level maximum message size), stores E4 and E5, then the limit is lifted and the
 * resend of E3 is answered as a duplicate. Upstream completed it as persisted and deleted E3 on the
 * source: the replication backlog drained with E3 on neither side. The rule checked: while E3 has not
 * reached the remote, the source keeps it. The remote here runs without our fence, as upstream's remote
 * does ({@link GeoReplicationFenceBenchTest} has ours): the source side alone must keep E3.
 */
public class GeoReplicationGapBenchTest extends GeoReplicationBenchBase {
    private MessageIdImpl e3;

    /** The remote behaves as upstream's: the source's record alone keeps E3. */
    @Override
    protected boolean remoteFences() {
        return false;
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 240_000)
    public void aMessageTheRemoteRejectedStaysOnTheSourceUntilTheRemoteHasIt() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/gap");
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        limitRemoteMessageSize(topic);

        try (Consumer<String> remote = client2.newConsumer(Schema.STRING).topic(topic).subscriptionName("check")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
             Producer<String> source = client1.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                     .create()) {
            e3 = (MessageIdImpl) source.send("E3:" + "x".repeat(4096));
            source.send("E4");
            source.send("E5");
            Set<String> onRemote = new HashSet<>();
            e4AndE5StoredBeforeE3(topic, remote, onRemote);

            admin2.topicPolicies().removeMaxMessageSize(topic);
            // Upstream deletes E3 on the source within a few seconds of the duplicate receipt; the rule
            // must hold throughout.
            holdsThroughout("E3 left the source backlog without reaching the remote", () -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E3") || replicationBacklog(topic) > 0;
            });
            assertTrue(onRemote.contains("E3") || replicationBacklog(topic) > 0,
                    "E3 left the source backlog without reaching the remote");
            // Kept, and visibly: upstream 4.0.8's replicator can also stall in the rewind loop (ours: broker
            // patch 0007), which keeps E3 without anyone knowing why; only a record says E3 is held. The record
            // says so once the resend due after the lift has been answered as a duplicate.
            await().atMost(WAIT).untilAsserted(() -> assertTrue(onRemote.contains("E3")
                    || Long.valueOf(1).equals(rejectionMarkers(topic).get(e3Key())),
                    "E3 neither on the remote nor held: " + rejectionMarkers(topic)));
        }
    }

    /**
     * The topic moves to another broker while the remote still refuses E3 (here: the
     * topic is unloaded and loaded with a new replication client, whose producer has no in-memory record of
     * the refusal, as another broker's would not). The limit is then lifted and the new owner's resend of E3
     * is answered as a duplicate. Upstream (and the previous, in-memory design) took that for a success and
     * deleted E3 on the source. Ours recorded the refusal on the replicator cursor before rewinding: the new
     * owner reads it and holds E3. Then the documented operator path releases it: publish E3 to the remote
     * by hand, skip it on the source.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 300_000)
    public void aRejectionSurvivesATopicMoveAndItsDuplicateReceiptHoldsTheEntry() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/moved");
        Set<String> onRemote = new HashSet<>();
        try (Consumer<String> remote = rejectE3AndStoreE4E5(topic, onRemote)) {
            // The limit is lifted while no broker owns the source topic: the new owner's producer never sees a
            // refusal, so only a record the previous owner wrote down can tell its duplicate receipt apart.
            if (!BenchGroups.onUpstream()) {
                // Ours: the refusal is on the cursor before the topic moves (upstream has nothing to check here):
                // recorded (0), or already held (1) if a resend was answered as a duplicate before the move.
                await().atMost(WAIT).until(() -> rejectionMarkers(topic).containsKey(e3Key()));
            }
            moveToABrokerWithoutTheClientRecord(topic, () -> liftTheLimit(topic));
            holdsThroughout("E3 left the source backlog without reaching the remote after the topic moved", () -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E3") || replicationBacklog(topic) > 0;
            });
            assertTrue(onRemote.contains("E3") || replicationBacklog(topic) > 0,
                    "E3 left the source backlog without reaching the remote after the topic moved");

            // Ours from here on: E3 is held, visibly (once the new owner's resend was answered as a duplicate),
            // and neither sent again nor deleted.
            await().atMost(WAIT).untilAsserted(() -> assertEquals(rejectionMarkers(topic), Map.of(e3Key(), 1L),
                    "stats-internal shows E3 held"));
            assertFalse(onRemote.contains("E3"), "held, not republished");
            assertEquals(replicationBacklog(topic), 1);
            // The new owner's producer never saw a refusal: the hold comes from the record on the cursor, made
            // before the move (then the entry is not even resent) or after it, by the broker's own check.
            String record = replicatorCursorProperties(topic).get(e3Key());
            assertTrue(record != null && record.startsWith(ReplicationRejections.HELD), "record: " + record);

            // The operator path (docs/geo-replication.md): publish the held entry to the remote, then skip it.
            byte[] held = admin1.topics().getMessageById(topic, e3.getLedgerId(), e3.getEntryId()).getData();
            assertTrue(new String(held, StandardCharsets.UTF_8).startsWith("E3:"));
            try (Producer<byte[]> byHand = client2.newProducer().topic(topic).create()) {
                byHand.send(held);
            }
            admin1.topics().skipMessages(topic, "pulsar.repl." + cluster2, 1);
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E3") && replicationBacklog(topic) == 0
                        && rejectionMarkers(topic).isEmpty();
            });
        }
    }

    /**
     * Two messages refused at once (E3 and E4 both above the remote's limit, E5 and E6 stored
     * after them), and the metadata-store write of the first record failing once. Both rejections must be on
     * the cursor before the topic moves, whichever write failed: the new owner holds both duplicate receipts.
     * Upstream deletes both.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 300_000)
    public void twoRejectionsAtOnceAndAFailedRecordWriteAreBothHeldAfterATopicMove() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/two");
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        AtomicInteger failedWrites = failTheFirstRejectionRecordWrite(topic);
        limitRemoteMessageSize(topic);
        Set<String> onRemote = new HashSet<>();
        try (Consumer<String> remote = client2.newConsumer(Schema.STRING).topic(topic).subscriptionName("check")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            MessageIdImpl e4;
            try (Producer<String> source = client1.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                    .create()) {
                CompletableFuture<MessageId> sent3 = source.sendAsync("E3:" + "x".repeat(4096));
                CompletableFuture<MessageId> sent4 = source.sendAsync("E4:" + "x".repeat(4096));
                source.sendAsync("E5");
                source.send("E6");
                e3 = (MessageIdImpl) sent3.get(10, TimeUnit.SECONDS);
                e4 = (MessageIdImpl) sent4.get(10, TimeUnit.SECONDS);
            }
            String e4Key = PROPERTY_PREFIX + e4.getLedgerId() + ":" + e4.getEntryId();
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E5") && onRemote.contains("E6");
            });
            if (!BenchGroups.onUpstream()) {
                await().atMost(WAIT).until(() -> rejectionMarkers(topic).keySet().containsAll(List.of(e3Key(), e4Key)));
                assertEquals(failedWrites.get(), 1, "the injected metadata-store failure did not happen");
            }
            moveToABrokerWithoutTheClientRecord(topic, () -> liftTheLimit(topic));
            // Upstream deletes both within a few seconds of the duplicate receipts, for good.
            holdsThroughout("E3 or E4 left the source backlog without reaching the remote after the topic moved",
                    () -> {
                        receiveAvailable(remote, onRemote);
                        return missing(onRemote, "E3:", "E4:") <= replicationBacklog(topic);
                    });
            // Ours: both held (once the new owner's resends were answered as duplicates), neither republished.
            await().atMost(WAIT).untilAsserted(() -> {
                Map<String, Long> markers = rejectionMarkers(topic);
                for (String key : List.of(e3Key(), e4Key)) {
                    String body = key.equals(e3Key()) ? "E3:" : "E4:";
                    assertTrue(missing(onRemote, body) == 0 || Long.valueOf(1).equals(markers.get(key)),
                            body + " neither on the remote nor held after the topic moved: " + markers
                                    + ", backlog " + replicationBacklog(topic));
                }
            });
            assertEquals(missing(onRemote, "E3:", "E4:"), 2, "held, not republished");
            assertEquals(replicationBacklog(topic), 2);
            assertEquals(rejectionMarkers(topic), Map.of(e3Key(), 1L, e4Key, 1L));
        }
    }

    /** How many of the messages starting with {@code prefixes} the remote has not delivered. */
    private static long missing(Set<String> onRemote, String... prefixes) {
        return java.util.Arrays.stream(prefixes)
                .filter(prefix -> onRemote.stream().noneMatch(message -> message.startsWith(prefix))).count();
    }

    /**
     * The source topic's managed ledger fails the first cursor-info write that carries a rejection record, as a
     * metadata-store error (before the store: the cursor's cached version stays valid, as for a failed request).
     * Returns the number of writes failed. Upstream writes no record: nothing fails there.
     */
    private AtomicInteger failTheFirstRejectionRecordWrite(String topic) throws Exception {
        ManagedLedgerImpl ledger = (ManagedLedgerImpl) ((org.apache.pulsar.broker.service.persistent.PersistentTopic)
                pulsar1.getBrokerService().getTopic(topic, false).get(10, TimeUnit.SECONDS).get()).getManagedLedger();
        Field field = ManagedLedgerImpl.class.getDeclaredField("store");
        field.setAccessible(true);
        MetaStore store = (MetaStore) field.get(ledger);
        AtomicInteger failed = new AtomicInteger();
        InvocationHandler failingOnce = (proxy, method, args) -> {
            if (method.getName().equals("asyncUpdateCursorInfo") && carriesARejectionRecord(args[2])
                    && failed.compareAndSet(0, 1)) {
                @SuppressWarnings("unchecked")
                MetaStore.MetaStoreCallback<Void> callback = (MetaStore.MetaStoreCallback<Void>) args[4];
                callback.operationFailed(new ManagedLedgerException.MetaStoreException("injected: failed once"));
                return null;
            }
            try {
                return method.invoke(store, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        field.set(ledger, Proxy.newProxyInstance(MetaStore.class.getClassLoader(), new Class<?>[] {MetaStore.class},
                failingOnce));
        return failed;
    }

    // ManagedCursorInfo is protobuf on 4.0.8 (getCursorProperties(i)) and LightProto on 4.2.4 (getCursorPropertyAt).
    private static boolean carriesARejectionRecord(Object cursorInfo) throws Exception {
        int count = (int) cursorInfo.getClass().getMethod("getCursorPropertiesCount").invoke(cursorInfo);
        Method at;
        try {
            at = cursorInfo.getClass().getMethod("getCursorPropertyAt", int.class);
        } catch (NoSuchMethodException e) {
            at = cursorInfo.getClass().getMethod("getCursorProperties", int.class);
        }
        for (int i = 0; i < count; i++) {
            Object property = at.invoke(cursorInfo, i);
            String name = (String) property.getClass().getMethod("getName").invoke(property);
            if (name.startsWith(PROPERTY_PREFIX)) {
                return true;
            }
        }
        return false;
    }

    /** Lifts the remote's limit and waits until its broker enforces that (topic policies apply asynchronously). */
    private void liftTheLimit(String topic) throws Exception {
        admin2.topicPolicies().removeMaxMessageSize(topic);
        // Until then, a message of E3's size from another producer is refused there.
        try (Producer<String> probe = client2.newProducer(Schema.STRING).topic(topic).create()) {
            await().atMost(WAIT).ignoreExceptions().until(() -> {
                probe.send("probe:" + "x".repeat(4096));
                return true;
            });
        }
    }

    /**
     * A remote without source-position dedup (V1: an older broker during an upgrade; here the
     * replication client does not announce it, so the remote deduplicates by the original producer's name and
     * sequence id). It drops the resend of E3 the same way, with the same -1/-1 receipt: ours holds E3 on the
     * source, upstream deletes it.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 240_000)
    public void aV1RemotesDuplicateReceiptForARefusedMessageHoldsTheEntry() throws Exception {
        Runnable restoreClient = replicateThroughV1();
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/v1");
        Set<String> onRemote = new HashSet<>();
        try (Consumer<String> remote = rejectE3AndStoreE4E5(topic, onRemote)) {
            assertTrue(remoteReplicatorProducersUseV1(topic), "the remote must deduplicate this producer by V1");
            admin2.topicPolicies().removeMaxMessageSize(topic);
            holdsThroughout("E3 left the source backlog without reaching a V1 remote", () -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E3") || replicationBacklog(topic) > 0;
            });
            assertTrue(onRemote.contains("E3") || replicationBacklog(topic) > 0,
                    "E3 left the source backlog without reaching a V1 remote");
            await().atMost(WAIT).untilAsserted(() -> assertEquals(rejectionMarkers(topic), Map.of(e3Key(), 1L),
                    "stats-internal shows E3 held"));
            assertFalse(onRemote.contains("E3"), "held, not republished");
        } finally {
            restoreClient.run();
        }
    }

    /**
     * The long refusal of {@code GeoReplicationFenceBenchTest} towards a V1 remote, which has no fence: the source's
     * backoff alone keeps the resends and log lines within the same bounds and E4 behind E3 (it sends one message
     * at a time while E3 is held), and E3, E4, E5 arrive in source order.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 300_000)
    public void aLongRefusalByAV1RemoteIsResentWithBackoffAndArrivesInSourceOrder() throws Exception {
        Runnable restoreClient = replicateThroughV1();
        try {
            String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/v1-backoff");
            refuseE3ThenLift(topic);
            assertTrue(remoteReplicatorProducersUseV1(topic), "the remote must deduplicate this producer by V1");
        } finally {
            restoreClient.run();
        }
    }

    // The remote deduplicates this source's replicated messages by V1: its CONNECT leaves the V2 flag out.
    private Runnable replicateThroughV1() throws Exception {
        return replicateThrough((conf, eventLoopGroup) ->
                new ClientCnx(InstrumentProvider.NOOP, conf, eventLoopGroup) {
                    @Override
                    protected ByteBuf newConnectCommand() throws Exception {
                        return withoutReplDedupByLidAndEid(super.newConnectCommand());
                    }

                    @Override
                    public boolean isBrokerSupportsReplDedupByLidAndEid() {
                        return false;
                    }
                });
    }

    /**
     * The chunked message of the fence tests, towards a remote that does not fence (as upstream's): the remote
     * refuses the first chunk of
     * a chunked message once (a bit flipped on the wire) and stores the later chunks, which were already on
     * their way; the first chunk's resend is then a duplicate. The message can never be assembled there, so the
     * source must keep it: ours holds its chunks (nothing deleted, nothing republished out of order); upstream
     * deletes them (the backlog drains with the message unreadable on the remote).
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 240_000)
    public void aChunkedMessageWhoseFirstChunkIsRefusedOnceIsKeptOnTheSource() throws Exception {
        try (ChunkedScenario scenario = new ChunkedScenario()) {
            scenario.sendChunkedThenAfter();
            await().atMost(WAIT).until(() -> {
                scenario.receive();
                return scenario.onRemote.contains("after");
            });
            // The rule: while the remote cannot assemble the message, its chunks stay on the source.
            holdsThroughout("the chunked message left the source without being readable on the remote", () -> {
                scenario.receive();
                return scenario.onRemote.contains("chunked") || replicationBacklog(scenario.topic) > 0;
            });
            assertTrue(scenario.firstChunkCorrupted(), "the first chunk was corrupted on the wire");
            System.out.printf("[%s] chunked message, remote without the fence: on the remote %s, replication"
                    + " backlog %d, records %s%n", BenchGroups.onUpstream() ? "upstream" : "ours",
                    scenario.onRemote, replicationBacklog(scenario.topic), rejectionMarkers(scenario.topic));
            assertTrue(scenario.onRemote.contains("chunked") || replicationBacklog(scenario.topic) > 0,
                    "the chunked message left the source without being readable on the remote");
            // Kept visibly (a stalled replicator keeps it too, without saying why).
            assertTrue(scenario.onRemote.contains("chunked") || !rejectionMarkers(scenario.topic).isEmpty(),
                    "the chunked message is neither readable on the remote nor held");
        }
    }

    /** The CONNECT command as upstream's client builds it, without the V2 replication-dedup feature flag. */
    private static ByteBuf withoutReplDedupByLidAndEid(ByteBuf connect) {
        try {
            connect.skipBytes(4);
            int commandSize = connect.readInt();
            BaseCommand command = new BaseCommand();
            command.parseFrom(connect, commandSize);
            command.getConnect().getFeatureFlags().setSupportsReplDedupByLidAndEid(false);
            return Commands.serializeWithSize(command);
        } finally {
            connect.release();
        }
    }

    private boolean remoteReplicatorProducersUseV1(String topic) throws Exception {
        List<org.apache.pulsar.broker.service.Producer> replicators = ((org.apache.pulsar.broker.service.persistent
                .PersistentTopic) pulsar2.getBrokerService().getTopic(topic, false).get(10, TimeUnit.SECONDS).get())
                .getProducers().values().stream()
                .filter(producer -> producer.getProducerName().startsWith(config2.getReplicatorPrefix()))
                .collect(Collectors.toList());
        return !replicators.isEmpty()
                && replicators.stream().noneMatch(producer -> producer.getCnx().isClientSupportsReplDedupByLidAndEid());
    }

    interface Step {
        void run() throws Exception;
    }

    /**
     * Unloads the source topic, replaces the broker's replication client, runs {@code whileUnloaded}, loads the
     * topic again.
     */
    @SuppressWarnings("unchecked")
    private void moveToABrokerWithoutTheClientRecord(String topic, Step whileUnloaded) throws Exception {
        admin1.topics().unload(topic);
        Field field = BrokerService.class.getDeclaredField("replicationClients");
        field.setAccessible(true);
        PulsarClient previous = ((Map<String, PulsarClient>) field.get(pulsar1.getBrokerService())).remove(cluster2);
        if (previous != null) {
            previous.closeAsync();
        }
        whileUnloaded.run();
        pulsar1.getBrokerService().getTopic(topic, false).get(10, TimeUnit.SECONDS);
        waitReplicatorStarted(topic);
    }

    /** The report's start: the remote refuses E3 (4 KB) by size before its dedup check, stores E4 and E5. */
    private Consumer<String> rejectE3AndStoreE4E5(String topic, Set<String> onRemote) throws Exception {
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        limitRemoteMessageSize(topic);
        Consumer<String> remote = client2.newConsumer(Schema.STRING).topic(topic).subscriptionName("check")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
        try (Producer<String> source = client1.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            e3 = (MessageIdImpl) source.send("E3:" + "x".repeat(4096));
            source.send("E4");
            source.send("E5");
        }
        if (!e4AndE5StoredBeforeE3(topic, remote, onRemote)) {
            remote.close();
            throw new SkipException("E4 and E5 were read after the remote refused E3: our resend backoff kept them"
                    + " behind it, so the report's timeline (E4 and E5 stored, then E3's duplicate receipt) does not"
                    + " arise");
        }
        return remote;
    }

    /**
     * Whether the remote stored E4 and E5 while refusing E3. Upstream's replicator always sends them. Ours sends
     * them only if they were in flight with E3 when the refusal came back: read after it, they wait behind E3,
     * one message at a time (docs/geo-replication.md, backoff), and the remote never has them before E3.
     */
    private boolean e4AndE5StoredBeforeE3(String topic, Consumer<String> remote, Set<String> onRemote)
            throws Exception {
        Callable<Boolean> stored = () -> {
            receiveAvailable(remote, onRemote);
            return onRemote.contains("E4") && onRemote.contains("E5");
        };
        if (BenchGroups.onUpstream()) {
            await().atMost(WAIT).until(stored);
            return true;
        }
        await().atMost(WAIT).until(() -> stored.call() || rejectionMarkers(topic).containsKey(e3Key()));
        try {
            // Sends in flight when the refusal was recorded complete within a round trip.
            await().atMost(Duration.ofSeconds(10)).until(stored);
            return true;
        } catch (ConditionTimeoutException e) {
            return false;
        }
    }

    private String e3Key() {
        return PROPERTY_PREFIX + e3.getLedgerId() + ":" + e3.getEntryId();
    }

    /** The replicator cursor's properties as written (with their values), from the broker that owns it. */
    private Map<String, String> replicatorCursorProperties(String topic) throws Exception {
        return ((org.apache.pulsar.broker.service.persistent.PersistentTopic) pulsar1.getBrokerService()
                .getTopic(topic, false).get(10, TimeUnit.SECONDS).get()).getManagedLedger()
                .openCursor("pulsar.repl." + cluster2).getCursorProperties();
    }
}
