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
package org.apache.pulsar.client.impl;

import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNotSame;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.impl.conf.ClientConfigurationData;
import org.apache.pulsar.client.impl.conf.ProducerConfigurationData;
import org.apache.pulsar.client.impl.metrics.InstrumentProvider;
import org.apache.pulsar.client.impl.metrics.LatencyHistogram;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.mockito.Mockito;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * The replication producer's receipts, scripted on the test thread (#26113): the remote rejects E3 before
 * its dedup check, stores E4 and E5 (its high-water mark moves to 7:5), and answers the resend of E3
 * {@code -1/-1}, a duplicate. Upstream completed that resend as persisted, and the source replicator then
 * deleted E3, which the remote never stored.
 */
public class GeoReplicationUnconfirmedBenchTest {
    private static final String TOPIC = "persistent://public/default/geo";
    private static final long L = 7;

    private PulsarClientImpl client;
    private ClientCnx cnx;
    private EmbeddedChannel channel;
    private boolean localBufferIntact;
    private GeoReplicationProducerImpl producer;

    /** One replicated entry's send: its outcome and the message id it was completed with. */
    private static final class Send {
        final CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        volatile MessageId messageId;

        boolean succeeded() {
            return outcome.isDone() && outcome.join() == null;
        }
    }

    @BeforeMethod(alwaysRun = true)
    public void setUp() {
        client = mock(PulsarClientImpl.class, invocation ->
                CompletableFuture.class.isAssignableFrom(invocation.getMethod().getReturnType())
                        ? new CompletableFuture<>() : Mockito.RETURNS_DEFAULTS.answer(invocation));
        ClientConfigurationData clientConf = new ClientConfigurationData();
        clientConf.setStatsIntervalSeconds(0);
        when(client.getConfiguration()).thenReturn(clientConf);
        when(client.getCnxPool()).thenReturn(mock(ConnectionPool.class));
        when(client.instrumentProvider()).thenReturn(InstrumentProvider.NOOP);
        when(client.getMemoryLimitController()).thenReturn(mock(MemoryLimitController.class));

        producer = newProducer();

        channel = new EmbeddedChannel();
        cnx = mock(ClientCnx.class);
        when(cnx.isBrokerSupportsReplDedupByLidAndEid()).thenReturn(true);
        when(cnx.channel()).thenReturn(channel);
        ChannelHandlerContext ctx = mock(ChannelHandlerContext.class);
        when(ctx.channel()).thenReturn(channel);
        when(cnx.ctx()).thenReturn(ctx);
    }

    /** The replicator's producer on this client; the replicator creates a new one after a disconnect. */
    private GeoReplicationProducerImpl newProducer() {
        ProducerConfigurationData conf = new ProducerConfigurationData();
        conf.setBatchingEnabled(false);
        conf.setSendTimeoutMs(0);
        conf.setMaxPendingMessages(0);
        conf.setProducerName("pulsar.repl.r1-->r2");
        return new GeoReplicationProducerImpl(client, TOPIC, conf, new CompletableFuture<>(), -1,
                Schema.BYTES, null, Optional.empty()) {
            @Override
            protected boolean verifyLocalBufferIsNotCorrupted(ProducerImpl.OpSendMsg op) {
                return localBufferIntact;
            }
        };
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() {
        channel.finishAndReleaseAll();
    }

    /** Queues the send of source entry L:entryId, as the replicator does (the original producer's sequence id). */
    private Send send(long entryId, long sequenceId) {
        MessageImpl<byte[]> msg = replicatedMessage(entryId, sequenceId);
        Send send = new Send();
        ProducerImpl.OpSendMsg op = ProducerImpl.OpSendMsg.create(LatencyHistogram.NOOP, msg, null, sequenceId,
                new CompletingCallback(send, msg));
        synchronized (producer) {
            producer.pendingMessages.add(op);
        }
        return send;
    }

    private static MessageImpl<byte[]> replicatedMessage(long entryId, long sequenceId) {
        MessageMetadata metadata = new MessageMetadata()
                .setProducerName("source-producer")
                .setSequenceId(sequenceId)
                .setPublishTime(1);
        metadata.addProperty().setKey(GeoReplicationProducerImpl.MSG_PROP_REPL_SOURCE_POSITION)
                .setValue(L + ":" + entryId);
        return MessageImpl.create(metadata, ByteBuffer.allocate(0), Schema.BYTES, TOPIC);
    }

    /** Completes a {@link Send} with the outcome and the message id the producer completed the message with. */
    private static final class CompletingCallback implements SendCallback {
        private final Send send;
        private final MessageImpl<byte[]> message;

        CompletingCallback(Send send, MessageImpl<byte[]> message) {
            this.send = send;
            this.message = message;
        }

        @Override
        public void sendComplete(Throwable e, OpSendMsgStats stats) {
            send.messageId = message.getMessageId();
            send.outcome.complete(e);
        }

        @Override
        public void addCallback(MessageImpl<?> msg, SendCallback scb) {
        }

        @Override
        public SendCallback getNextSendCallback() {
            return null;
        }

        @Override
        public MessageImpl<?> getNextMessage() {
            return null;
        }

        @Override
        public CompletableFuture<MessageId> getFuture() {
            return null;
        }
    }

    /** The remote's receipt for source entry L:entryId: its target position, or -1/-1 for a duplicate. */
    private void receipt(long entryId, long targetLedgerId, long targetEntryId) {
        producer.ackReceived(cnx, L, entryId, targetLedgerId, targetEntryId);
    }

    private int pending() {
        synchronized (producer) {
            return producer.pendingMessages.messagesCount();
        }
    }

    private static void assertUnconfirmed(Send send, long entryId) {
        assertTrue(send.outcome.isDone(), "the resend must complete");
        Throwable failure = send.outcome.join();
        assertNotNull(failure, "a -1/-1 receipt for a message the remote rejected must not report it persisted");
        assertTrue(failure instanceof GeoReplicationUnconfirmedException, String.valueOf(failure));
        GeoReplicationUnconfirmedException unconfirmed = (GeoReplicationUnconfirmedException) failure;
        assertEquals(unconfirmed.getSourceLedgerId(), L);
        assertEquals(unconfirmed.getSourceEntryId(), entryId);
        assertFalse(failure instanceof PulsarClientException.InvalidMessageException,
                "the replicator deletes the source entry on InvalidMessageException");
    }

    /** The report's timeline: a corrupted local buffer fails E3, the replicator rewinds and resends it (Case-1). */
    @Test(groups = UPSTREAM_BUG)
    public void resendOfAMessageRejectedForItsChecksumIsUnconfirmed() {
        Send e3 = send(3, 103);
        Send e4 = send(4, 104);
        Send e5 = send(5, 105);
        localBufferIntact = false;
        producer.recoverChecksumError(cnx, 103);
        assertTrue(e3.outcome.join() instanceof PulsarClientException.ChecksumException);
        receipt(4, 9, 0);
        receipt(5, 9, 1);
        assertTrue(e4.succeeded() && e5.succeeded());

        Send e3Again = send(3, 103);
        receipt(3, -1, -1);
        assertUnconfirmed(e3Again, 3);
        assertEquals(pending(), 0);
        assertTrue(channel.isOpen());
    }

    /**
     * The non-corrupted checksum branch resends everything on the same connection; E4's receipt then
     * arrives while E3 is the head, the producer closes the connection, and after the reconnect the remote
     * answers E3 as a duplicate (Case-3). Legitimate duplicates of E4 and E5 stay successes.
     */
    @Test(groups = UPSTREAM_BUG)
    public void checksumErrorOnTheWireThenReconnectLeavesTheRejectedMessageUnconfirmed() {
        Send e3 = send(3, 103);
        Send e4 = send(4, 104);
        Send e5 = send(5, 105);
        localBufferIntact = true;
        producer.recoverChecksumError(cnx, 103);
        receipt(4, 9, 0);
        assertFalse(channel.isOpen(), "an out-of-order receipt closes the connection");
        assertFalse(e3.outcome.isDone() || e4.outcome.isDone() || e5.outcome.isDone());

        receipt(3, -1, -1);
        assertUnconfirmed(e3, 3);
        receipt(4, -1, -1);
        receipt(5, -1, -1);
        assertTrue(e4.succeeded() && e5.succeeded(), "a duplicate of a stored message stays a success");
        assertEquals(pending(), 0);
    }

    /** The remote refuses E3 with NotAllowedError (a topic-level max message size) and stores E4 and E5. */
    private void rejectE3AsNotAllowedAndStoreE4E5() {
        Send e3 = send(3, 103);
        send(4, 104);
        send(5, 105);
        producer.recoverNotAllowedError(103, "Exceed maximum message size");
        assertTrue(e3.outcome.join() instanceof PulsarClientException.NotAllowedException);
        receipt(4, 9, 0);
        receipt(5, 9, 1);
    }

    /** NotAllowedError (for example a topic-level max message size on the remote), then the limit is lifted. */
    @Test(groups = UPSTREAM_BUG)
    public void resendOfAMessageRejectedAsNotAllowedIsUnconfirmed() {
        rejectE3AsNotAllowedAndStoreE4E5();

        Send e3Again = send(3, 103);
        receipt(3, -1, -1);
        assertUnconfirmed(e3Again, 3);
    }

    /**
     * The replicator re-creates its producer (a disconnect) after the remote rejected E3 and stored E4 and
     * E5: the new producer's resend of E3 is answered -1/-1 and must not be a confirmation either.
     */
    @Test(groups = UPSTREAM_BUG)
    public void aRecreatedProducerStillTreatsTheRejectedMessageAsUnconfirmed() {
        rejectE3AsNotAllowedAndStoreE4E5();

        producer = newProducer();
        Send e3Again = send(3, 103);
        receipt(3, -1, -1);
        assertUnconfirmed(e3Again, 3);
    }

    /**
     * Case-1 completes an op already covered by the last persisted position on another message's receipt:
     * it must not be reported with that message's target position.
     */
    @Test(groups = UPSTREAM_BUG)
    public void anOpCompletedOnAnotherMessagesReceiptCarriesNoTargetPosition() {
        send(4, 104);
        send(5, 105);
        receipt(4, 9, 0);
        receipt(5, 9, 1);
        Send e4Again = send(4, 104);
        Send e6 = send(6, 106);
        receipt(6, 9, 2);
        assertTrue(e4Again.succeeded() && e6.succeeded());
        assertEquals(e6.messageId, new MessageIdImpl(9, 2, -1));
        assertEquals(e4Again.messageId, new MessageIdImpl(-1, -1, -1), "not E6's target position");
    }

    /**
     * Bounded state: the record shared by the replicator's producers on this client
     * outlives a closed producer only while it holds a rejection.
     */
    @Test(groups = FORK_ONLY)
    public void aClosedProducersRecordIsKeptOnlyWhileItHoldsARejection() {
        String name = "pulsar.repl.r1-->r2";
        RejectedSourcePositions unused = RejectedSourcePositions.shared(client, TOPIC, name);
        producer.closeAsync();
        producer = newProducer();
        assertNotSame(RejectedSourcePositions.shared(client, TOPIC, name), unused, "an empty record is released");

        rejectE3AsNotAllowedAndStoreE4E5();
        RejectedSourcePositions holding = RejectedSourcePositions.shared(client, TOPIC, name);
        producer.closeAsync();
        producer = newProducer();
        assertSame(RejectedSourcePositions.shared(client, TOPIC, name), holding, "kept for the next producer");
        assertTrue(holding.contains(L, 3));
    }

    /**
     * A V1 remote (an older broker during an upgrade: no source-position dedup) answers by the original
     * producer's sequence id, and drops a resend by it the same way.
     */
    private void v1Receipt(long sequenceId, long targetLedgerId, long targetEntryId) {
        producer.ackReceived(cnx, sequenceId, sequenceId, targetLedgerId, targetEntryId);
    }

    /** At the client: a V1 remote's duplicate receipt for E3, which it refused, is unconfirmed. */
    @Test(groups = UPSTREAM_BUG)
    public void aV1RemotesDuplicateReceiptForARejectedMessageIsUnconfirmed() {
        when(cnx.isBrokerSupportsReplDedupByLidAndEid()).thenReturn(false);
        Send e3 = send(3, 103);
        Send e4 = send(4, 104);
        Send e5 = send(5, 105);
        producer.recoverNotAllowedError(103, "Exceed maximum message size");
        assertTrue(e3.outcome.join() instanceof PulsarClientException.NotAllowedException);
        v1Receipt(104, 9, 0);
        v1Receipt(105, 9, 1);
        assertTrue(e4.succeeded() && e5.succeeded());

        Send e3Again = send(3, 103);
        v1Receipt(103, -1, -1);
        assertUnconfirmed(e3Again, 3);
        assertEquals(pending(), 0);
    }

    /** Controls on V1: a duplicate with no rejection is a success; a real receipt clears the rejection. */
    @Test
    public void aV1RemotesDuplicatesOfStoredMessagesStaySuccesses() {
        when(cnx.isBrokerSupportsReplDedupByLidAndEid()).thenReturn(false);
        Send e3 = send(3, 103);
        v1Receipt(103, -1, -1);
        assertTrue(e3.succeeded(), "ack lost on reconnect after a real persist: the remote answers -1/-1");

        Send e4 = send(4, 104);
        producer.recoverNotAllowedError(104, "Exceed maximum message size");
        assertTrue(e4.outcome.join() instanceof PulsarClientException.NotAllowedException);
        Send e4Again = send(4, 104);
        v1Receipt(104, 9, 0);
        assertTrue(e4Again.succeeded(), "stored on the second attempt");
        Send e4Third = send(4, 104);
        v1Receipt(104, -1, -1);
        assertTrue(e4Third.succeeded(), "a duplicate of a message the remote stored after all");
        assertEquals(pending(), 0);
    }

    /** Controls: without a rejection, -1/-1 is a legitimate duplicate, and a real receipt clears a rejection. */
    @Test
    public void duplicatesOfStoredMessagesStaySuccesses() {
        Send e3 = send(3, 103);
        receipt(3, -1, -1);
        assertTrue(e3.succeeded(), "ack lost on reconnect after a real persist: the remote answers -1/-1");

        Send e4 = send(4, 104);
        localBufferIntact = false;
        producer.recoverChecksumError(cnx, 104);
        assertTrue(e4.outcome.join() instanceof PulsarClientException.ChecksumException);
        Send e4Again = send(4, 104);
        receipt(4, 9, 0);
        assertTrue(e4Again.succeeded(), "stored on the second attempt");
        Send e4Third = send(4, 104);
        receipt(4, -1, -1);
        assertTrue(e4Third.succeeded(), "a duplicate of a message the remote stored after all");
        assertEquals(pending(), 0);
    }
}
