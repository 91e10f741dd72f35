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
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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

/**
 * The replication producer's receipts, scripted on the test thread (#26113): the remote rejects E3 before
 * its dedup check, stores E4 and E5 (its high-water mark moves to 7:5), and answers the resend of E3
 * {@code -1/-1}, a duplicate. Without the fix the resend completed as persisted, and the source replicator
 * then deleted E3, which the remote never stored.
 */
public abstract class GeoReplicationProducerReceiptTestBase {
    protected static final String TOPIC = "persistent://public/default/geo";
    protected static final long L = 7;

    protected PulsarClientImpl client;
    protected ClientCnx cnx;
    protected EmbeddedChannel channel;
    protected boolean localBufferIntact;
    protected GeoReplicationProducerImpl producer;

    /** One replicated entry's send: its outcome and the message id it was completed with. */
    protected static final class Send {
        final CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        volatile MessageId messageId;

        boolean succeeded() {
            return outcome.isDone() && outcome.join() == null;
        }
    }

    @BeforeMethod(alwaysRun = true)
    public void setUp() {
        // A mock runs no field initializer: the client's record of rejected source positions (its one Map getter)
        // is one map for every producer of the test, as the client's own field would be.
        Map<Object, Object> clientRecords = new ConcurrentHashMap<>();
        client = mock(PulsarClientImpl.class, invocation -> {
            Class<?> type = invocation.getMethod().getReturnType();
            if (CompletableFuture.class.isAssignableFrom(type)) {
                return new CompletableFuture<>();
            }
            return Map.class.equals(type) ? clientRecords : Mockito.RETURNS_DEFAULTS.answer(invocation);
        });
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
    protected GeoReplicationProducerImpl newProducer() {
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
    protected Send send(long entryId, long sequenceId) {
        MessageMetadata metadata = new MessageMetadata()
                .setProducerName("source-producer")
                .setSequenceId(sequenceId)
                .setPublishTime(1);
        metadata.addProperty().setKey(GeoReplicationProducerImpl.MSG_PROP_REPL_SOURCE_POSITION)
                .setValue(L + ":" + entryId);
        MessageImpl<byte[]> msg = MessageImpl.create(metadata, ByteBuffer.allocate(0), Schema.BYTES, TOPIC);
        Send send = new Send();
        SendCallback callback = new SendCallback() {
            @Override
            public void sendComplete(Throwable e, OpSendMsgStats stats) {
                send.messageId = msg.getMessageId();
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
        };
        ProducerImpl.OpSendMsg op = ProducerImpl.OpSendMsg.create(LatencyHistogram.NOOP, msg, null, sequenceId,
                callback);
        synchronized (producer) {
            producer.pendingMessages.add(op);
        }
        return send;
    }

    /** The remote's receipt for source entry L:entryId: its target position, or -1/-1 for a duplicate. */
    protected void receipt(long entryId, long targetLedgerId, long targetEntryId) {
        producer.ackReceived(cnx, L, entryId, targetLedgerId, targetEntryId);
    }

    protected int pending() {
        synchronized (producer) {
            return producer.pendingMessages.messagesCount();
        }
    }

    /** The outcome of a send the scripted receipts must have completed (no wait: they run on this thread). */
    protected static Throwable outcomeOf(Send send) {
        assertTrue(send.outcome.isDone(), "the send must have completed");
        return send.outcome.join();
    }

    /**
     * A -1/-1 receipt for a message the remote rejected must not report it persisted, and must not fail it
     * with InvalidMessageException either: the replicator deletes the source entry on that exception.
     */
    protected static Throwable assertUnconfirmed(Send send) {
        Throwable failure = outcomeOf(send);
        assertNotNull(failure, "a -1/-1 receipt for a message the remote rejected must not report it persisted");
        assertFalse(failure instanceof PulsarClientException.InvalidMessageException,
                "the replicator deletes the source entry on InvalidMessageException");
        return failure;
    }

    /** The remote refuses E3 with NotAllowedError (a topic-level max message size) and stores E4 and E5. */
    protected void rejectE3AsNotAllowedAndStoreE4E5() {
        Send e3 = send(3, 103);
        send(4, 104);
        send(5, 105);
        producer.recoverNotAllowedError(103, "Exceed maximum message size");
        assertTrue(outcomeOf(e3) instanceof PulsarClientException.NotAllowedException);
        receipt(4, 9, 0);
        receipt(5, 9, 1);
    }

    /** A V1 remote (no source-position dedup) answers by the original producer's sequence id. */
    protected void v1Receipt(long sequenceId, long targetLedgerId, long targetEntryId) {
        producer.ackReceived(cnx, sequenceId, sequenceId, targetLedgerId, targetEntryId);
    }
}
