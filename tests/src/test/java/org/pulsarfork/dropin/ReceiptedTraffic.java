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
package org.pulsarfork.dropin;

import static org.awaitility.Awaitility.await;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

/**
 * A steady load on one topic while a scenario acts on the cluster: a producer publishing numbered messages, and a
 * Shared consumer acking each with a receipt. It keeps what the oracle needs: the messages the broker stored (send
 * acknowledged), those received, those whose ack was answered with success, and those received again after that
 * answer.
 */
final class ReceiptedTraffic implements AutoCloseable {
    private static final Duration DRAIN = Duration.ofSeconds(120);
    private final Producer<String> producer;
    private final Consumer<String> consumer;
    private final Set<String> stored = ConcurrentHashMap.newKeySet();
    private final Set<String> received = ConcurrentHashMap.newKeySet();
    private final Set<String> receipted = ConcurrentHashMap.newKeySet();
    private final Set<String> receiptedAgain = ConcurrentHashMap.newKeySet();
    private final AtomicInteger failedSends = new AtomicInteger();
    private final AtomicInteger sequence = new AtomicInteger();
    private final AtomicBoolean producing = new AtomicBoolean(true);
    // A fixed rate, not a fixed pause: the load stays what it was set to while a broker stalls.
    private final ScheduledExecutorService publisher = Executors.newSingleThreadScheduledExecutor();
    private final Thread subscriber;

    ReceiptedTraffic(PulsarClient client, String topic, int perSecond) throws Exception {
        consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("traffic")
                .subscriptionType(SubscriptionType.Shared)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .isAckReceiptEnabled(true).subscribe();
        producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .sendTimeout(0, TimeUnit.SECONDS).create();
        subscriber = new Thread(this::consume, "traffic-subscriber-" + topic);
        subscriber.start();
        publisher.scheduleAtFixedRate(this::publishOne, 0, TimeUnit.SECONDS.toMicros(1) / perSecond,
                TimeUnit.MICROSECONDS);
    }

    private void publishOne() {
        String value = String.format("t-%08d", sequence.getAndIncrement());
        producer.sendAsync(value).whenComplete((id, e) -> {
            if (e == null) {
                stored.add(value);
            } else {
                failedSends.incrementAndGet();
            }
        });
    }

    private void consume() {
        while (!Thread.currentThread().isInterrupted()) {
            Message<String> m;
            try {
                m = consumer.receive(1, TimeUnit.SECONDS);
            } catch (Exception e) {
                if (!consumer.isConnected() && !producing.get()) {
                    return;
                }
                continue;
            }
            if (m == null) {
                continue;
            }
            String value = m.getValue();
            if (receipted.contains(value)) {
                receiptedAgain.add(value);
            }
            received.add(value);
            consumer.acknowledgeAsync(m).thenRun(() -> receipted.add(value));
        }
    }

    /**
     * Stops publishing, waits until every stored message was received (or {@link #DRAIN} passed), and returns
     * {stored, received, receipted, receipted and received again, stored and never received, failed sends}.
     */
    int[] stopAndDrain() throws Exception {
        producing.set(false);
        publisher.shutdown();
        publisher.awaitTermination(30, TimeUnit.SECONDS);
        producer.flush();
        try {
            await().atMost(DRAIN).pollInterval(Duration.ofSeconds(1)).until(() -> received.containsAll(stored));
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            // Reported as lost messages below; the oracle fails on them.
        }
        subscriber.interrupt();
        subscriber.join(TimeUnit.SECONDS.toMillis(30));
        Set<String> lost = ConcurrentHashMap.newKeySet();
        lost.addAll(stored);
        lost.removeAll(received);
        return new int[] {stored.size(), received.size(), receipted.size(), receiptedAgain.size(), lost.size(),
                failedSends.get()};
    }

    /** The messages whose ack was answered with success. */
    Set<String> receipted() {
        return Set.copyOf(receipted);
    }

    @Override
    public void close() throws Exception {
        producing.set(false);
        publisher.shutdownNow();
        subscriber.interrupt();
        producer.closeAsync();
        consumer.closeAsync();
    }
}
