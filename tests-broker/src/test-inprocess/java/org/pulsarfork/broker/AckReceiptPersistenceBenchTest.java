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
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import io.netty.buffer.ByteBuf;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerFactoryImpl;
import org.apache.pulsar.broker.auth.MockedPulsarServiceBaseTest;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.impl.ClientCnx;
import org.apache.pulsar.client.impl.ConsumerImpl;
import org.apache.pulsar.client.impl.PulsarClientImpl;
import org.apache.pulsar.common.api.proto.CommandAck.AckType;
import org.apache.pulsar.common.naming.TopicName;
import org.apache.pulsar.common.protocol.Commands;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

/**
 * Ack receipts on 4.x with {@code ackReceiptWaitsForPersistence}: a receipted ack survives a crash that follows its
 * receipt. Upstream 4.x answers the receipt once the ack is applied in memory, and under the mark-delete limiter
 * (0.25/s here) its write comes up to four seconds later: a crash right after the receipt loses it. Ours answers
 * within that period, which bounds what each test waits; a crash less than four seconds after the permit's ack
 * is far inside it. The crash: a second managed-ledger factory opens the topic over the broker's own metadata store and
 * mock bookies, as the broker that takes a topic over does, and recovers the cursor from what was durable.
 */
public class AckReceiptPersistenceBenchTest extends MockedPulsarServiceBaseTest {
    private static final long RECEIPT_SECONDS = 30;
    private ManagedLedgerFactoryImpl afterCrash;

    @Override
    protected void setup() {
        // Each test starts the broker with its own setting (start).
    }

    private void start(String waitsForPersistence) throws Exception {
        conf.setManagedLedgerDefaultMarkDeleteRateLimit(0.25);
        if (waitsForPersistence != null) {
            conf.getProperties().setProperty("ackReceiptWaitsForPersistence", waitsForPersistence);
        }
        internalSetup();
        InProcessNamespace.create(admin, pulsar.getWebServiceAddress());
    }

    @AfterMethod(alwaysRun = true)
    @Override
    protected void cleanup() throws Exception {
        if (afterCrash != null) {
            afterCrash.shutdown();
            afterCrash = null;
        }
        internalCleanup();
    }

    /** Individual acks on a Shared subscription: m2 acked after m4 took the limiter's permit. */
    @Test(groups = UPSTREAM_BUG, timeOut = 120_000)
    public void anIndividualAckReceiptedIsRecoveredAfterACrash() throws Exception {
        start("true");
        assertTrue(individualAckReceiptedThenCrash("persistent://fork/ns/receipt-individual"),
                "m2's ack was receipted, and the cursor recovered after a crash does not have it");
    }

    /** Cumulative acks on an Exclusive subscription: m3 acked after m1 took the limiter's permit. */
    @Test(groups = UPSTREAM_BUG, timeOut = 120_000)
    public void aCumulativeAckReceiptedIsRecoveredAfterACrash() throws Exception {
        start("true");
        String topic = "persistent://fork/ns/receipt-cumulative";
        try (Consumer<byte[]> consumer = subscribe(topic, SubscriptionType.Exclusive)) {
            List<MessageId> ids = publishAndReceive(topic, consumer, 4);
            createCursorLedger(topic, () -> consumer.acknowledgeCumulative(ids.get(0)));
            consumer.acknowledgeCumulative(ids.get(1));
            consumer.acknowledgeCumulativeAsync(ids.get(3)).get(RECEIPT_SECONDS, TimeUnit.SECONDS);

            ManagedCursor recovered = crashAndRecover(topic);
            assertTrue(recovered.getMarkDeletedPosition().compareTo(position(ids.get(3))) >= 0,
                    "m3's cumulative ack was receipted; the cursor recovered after a crash is at "
                            + recovered.getMarkDeletedPosition());
        }
    }

    /**
     * A cumulative ack below the mark-delete position (a late one, after a failover) is answered with success once
     * that position is durable, not failed as a mark-delete going back. Sent as a raw command: the client itself
     * sends no cumulative ack below its last one.
     */
    @Test(timeOut = 120_000)
    public void aLateCumulativeAckBelowTheMarkDeletePositionIsAnsweredWithSuccess() throws Exception {
        start("true");
        String topic = "persistent://fork/ns/receipt-late-cumulative";
        try (Consumer<byte[]> consumer = subscribe(topic, SubscriptionType.Exclusive)) {
            List<MessageId> ids = publishAndReceive(topic, consumer, 3);
            consumer.acknowledgeCumulative(ids.get(2));
            MessageIdAdv late = (MessageIdAdv) ids.get(1);
            ClientCnx cnx = ((ConsumerImpl<byte[]>) consumer).getClientCnx();
            long requestId = ((PulsarClientImpl) pulsarClient).newRequestId();
            ByteBuf ack = Commands.newAck(consumerId(consumer), late.getLedgerId(),
                    late.getEntryId(), null, AckType.Cumulative, null, Map.of(), requestId);
            cnx.newAckForReceipt(ack, requestId).get(RECEIPT_SECONDS, TimeUnit.SECONDS);
        }
    }

    private static long consumerId(Consumer<byte[]> consumer) throws ReflectiveOperationException {
        Field id = ConsumerImpl.class.getDeclaredField("consumerId");
        id.setAccessible(true);
        return id.getLong(consumer);
    }

    /**
     * Without the setting a drop-in changes no latency: the receipt comes once the ack is applied, before the
     * limiter lets its write through, as upstream's does (and a crash then loses it, on both jars).
     */
    @Test(timeOut = 120_000)
    public void withoutTheSettingTheReceiptComesBeforeTheWrite() throws Exception {
        start(null);
        assertFalse(individualAckReceiptedThenCrash("persistent://fork/ns/receipt-default"),
                "m2's ack was written within the limiter period of the ack before it");
    }

    /**
     * Five messages on a Shared subscription: m0 acked (it creates the cursor ledger), m4 acked (it takes the
     * limiter's permit), m2 acked and its receipt awaited, then a crash. Returns whether the recovered cursor has
     * m2's ack.
     */
    private boolean individualAckReceiptedThenCrash(String topic) throws Exception {
        try (Consumer<byte[]> consumer = subscribe(topic, SubscriptionType.Shared)) {
            List<MessageId> ids = publishAndReceive(topic, consumer, 5);
            createCursorLedger(topic, () -> consumer.acknowledge(ids.get(0)));
            consumer.acknowledge(ids.get(4));
            consumer.acknowledgeAsync(ids.get(2)).get(RECEIPT_SECONDS, TimeUnit.SECONDS);
            return crashAndRecover(topic).isMessageDeleted(position(ids.get(2)));
        }
    }

    private Consumer<byte[]> subscribe(String topic, SubscriptionType type) throws PulsarClientException {
        return pulsarClient.newConsumer().topic(topic).subscriptionName("s").subscriptionType(type)
                .isAckReceiptEnabled(true).acknowledgmentGroupTime(0, TimeUnit.MILLISECONDS).subscribe();
    }

    private List<MessageId> publishAndReceive(String topic, Consumer<byte[]> consumer, int count) throws Exception {
        try (Producer<byte[]> producer = pulsarClient.newProducer().topic(topic).enableBatching(false).create()) {
            for (int i = 0; i < count; i++) {
                producer.send(("m" + i).getBytes());
            }
        }
        List<MessageId> ids = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Message<byte[]> message = consumer.receive(10, TimeUnit.SECONDS);
            // Set-up, not the claim: an AssertionError here would count as the upstream bug reproducing.
            if (message == null || !new String(message.getValue()).equals("m" + i)) {
                throw new IllegalStateException("m" + i + " not delivered in order: " + message);
            }
            ids.add(message.getMessageId());
        }
        return ids;
    }

    /**
     * The first ack creates the cursor ledger, whose first record is the latest state past the limiter: acks made
     * while it is being created would be written with it, and the scenario would measure the creation.
     */
    private void createCursorLedger(String topic, AckCall firstAck) throws Exception {
        firstAck.ack();
        await().atMost(Duration.ofSeconds(30)).until(
                () -> admin.topics().getInternalStats(topic).cursors.get("s").cursorLedger >= 0);
    }

    private interface AckCall {
        void ack() throws Exception;
    }

    private static Position position(MessageId id) {
        MessageIdAdv adv = (MessageIdAdv) id;
        return PositionFactory.create(adv.getLedgerId(), adv.getEntryId());
    }

    private ManagedCursor crashAndRecover(String topic) throws Exception {
        afterCrash = new ManagedLedgerFactoryImpl(pulsarTestContext.getLocalMetadataStore(),
                pulsarTestContext.getMockBookKeeper());
        ManagedLedger ledger = afterCrash.open(TopicName.get(topic).getPersistenceNamingEncoding(),
                new ManagedLedgerConfig());
        return ledger.openCursor("s");
    }
}
