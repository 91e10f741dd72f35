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
package org.apache.pulsar.broker.service;

import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.fail;
import io.netty.buffer.ByteBuf;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.impl.ClientCnx;
import org.apache.pulsar.client.impl.ConsumerImpl;
import org.apache.pulsar.client.impl.PulsarClientImpl;
import org.apache.pulsar.common.api.proto.CommandAck.AckType;
import org.apache.pulsar.common.protocol.Commands;

/**
 * An ack the broker discards, with a receipt requested (apache/pulsar #23261): the broker finds no consumer for
 * it (closed on the broker during an unload or a transfer, before the client heard of it). Upstream logs it at
 * debug and answers nothing: the client's ack future waits its whole operation timeout and then fails with a
 * timeout, as if the broker were unreachable. It must answer at once with an error that says the ack was not
 * applied; the messages are delivered again.
 */
public final class DiscardedAckReceiptSteps {
    // The client's operation timeout, which upstream's silence runs into; the broker's answer comes within
    // milliseconds.
    public static final int OPERATION_TIMEOUT_SECONDS = 5;
    private static final long ANSWER_SECONDS = 4;

    private DiscardedAckReceiptSteps() {
    }

    public static PulsarClient client(String serviceUrl) throws PulsarClientException {
        return PulsarClient.builder().serviceUrl(serviceUrl)
                .operationTimeout(OPERATION_TIMEOUT_SECONDS, TimeUnit.SECONDS).build();
    }

    /** An ack with a receipt, on the connection of a live consumer, for a consumer id the broker does not know. */
    public static void anAckForAConsumerTheBrokerDoesNotKnowIsAnswered(PulsarClient client, String topic)
            throws Exception {
        try (Producer<byte[]> producer = client.newProducer().topic(topic).create();
             Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName("s")
                     .isAckReceiptEnabled(true).subscribe()) {
            producer.send("m0".getBytes());
            Message<byte[]> message = consumer.receive(10, TimeUnit.SECONDS);
            assertNotNull(message, "m0 delivered");
            MessageIdAdv id = (MessageIdAdv) message.getMessageId();

            ClientCnx cnx = ((ConsumerImpl<byte[]>) consumer).getClientCnx();
            long requestId = ((PulsarClientImpl) client).newRequestId();
            // Consumer ids count up from 0 per client: this one names no consumer on the connection.
            long unknownConsumerId = Long.MAX_VALUE / 2;
            ByteBuf ack = Commands.newAck(unknownConsumerId, id.getLedgerId(), id.getEntryId(), null,
                    AckType.Individual, null, Map.of(), requestId);
            CompletableFuture<Void> receipt = cnx.newAckForReceipt(ack, requestId);

            long start = System.nanoTime();
            try {
                receipt.get(OPERATION_TIMEOUT_SECONDS + 20, TimeUnit.SECONDS);
                fail("the broker acknowledged an ack for a consumer it does not have");
            } catch (ExecutionException e) {
                long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
                boolean answered = !(e.getCause() instanceof PulsarClientException.TimeoutException);
                assertTrue(answered && seconds < ANSWER_SECONDS,
                        "the broker dropped the ack without an answer: the client waited " + seconds
                                + " s for its receipt and failed with " + e.getCause());
                assertTrue(e.getCause().getMessage().contains("not applied"),
                        "the error says the ack was not applied: " + e.getCause());
            }
        }
    }
}
