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

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.dropin.Commands.LINE;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Installing and removing our jars on a running cluster ({@link Cluster}), as an operator does:
 * <ul>
 *   <li>d. a rolling install under load ({@link ReceiptedTraffic}): each broker in turn stopped (SIGTERM),
 *   {@code bin/drop-in install}, started again, and the topic moved between the upgraded broker and the one not
 *   yet upgraded; no stored message lost, the subscription drains;</li>
 *   <li>e. a rollback: on our jars, under the 0.1/s limiter, a subscription acked with holes and one reset back
 *   (a seek) and acked again; both brokers stopped (SIGTERM), {@code bin/drop-in rollback} on each, started on
 *   upstream's jars: upstream reads every cursor, and exactly what was not acknowledged is delivered again.</li>
 * </ul>
 * A long run ({@code -Dcluster.long=true}, README).
 */
@Test(groups = FORK_ONLY)
public class ClusterUpgradeTest {
    private static final Duration MOVE = Duration.ofSeconds(120);
    private static final int RATE = 50;
    private static final int MESSAGES = 300;
    private StandaloneHomes homes;

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        homes = StandaloneHomes.unpack("cluster-upgrade", "cluster.long", false);
    }

    public void aRollingInstallUnderLoadLosesNothing() throws Exception {
        try (Cluster cluster = new Cluster(homes.work().resolve("rolling"), List.of(
                new String[] {"upstream", homes.home("upstream", "home-rolling-a").toString()},
                new String[] {"upstream", homes.home("upstream", "home-rolling-b").toString()}),
                LINE.startsWith("4.") ? "ackReceiptWaitsForPersistence=true" : "")) {
            cluster.start();
            String topic = "rolling";
            int[] r;
            try (PulsarClient client = cluster.client();
                 ReceiptedTraffic traffic = new ReceiptedTraffic(client, topic, RATE)) {
                ClusterOperationsTest.awaitReceipts(traffic, RATE);
                for (Cluster.Broker broker : cluster.brokers()) {
                    broker.stop();
                    homes.install(broker.home);
                    broker.installed("ours");
                    cluster.startBroker(broker);
                    // Onto the upgraded broker, then back to the other (upgraded or not yet).
                    for (Cluster.Broker destination : List.of(broker, cluster.other(broker))) {
                        if (!cluster.move(topic, destination, MOVE)) {
                            throw new SkipException("inconclusive: " + topic + " did not move to " + destination);
                        }
                        ClusterOperationsTest.awaitReceipts(traffic, RATE);
                    }
                }
                r = traffic.stopAndDrain();
            }
            System.out.printf("[cluster %s, scenario d, rolling install upstream -> ours] stored: %d; received: %d;"
                    + " receipted: %d; receipted and delivered again: %d; lost: %d; failed sends: %d%n", LINE,
                    r[0], r[1], r[2], r[3], r[4], r[5]);
            assertEquals(r[4], 0, "stored messages never delivered");
        }
    }

    public void aRollbackToUpstreamKeepsEveryAcknowledgment() throws Exception {
        try (Cluster cluster = new Cluster(homes.work().resolve("rollback"), List.of(
                new String[] {"ours", homes.home("ours", "home-rollback-a").toString()},
                new String[] {"ours", homes.home("ours", "home-rollback-b").toString()}),
                "managedLedgerDefaultMarkDeleteRateLimit=0.1\n"
                        + (LINE.startsWith("4.") ? "ackReceiptWaitsForPersistence=true\n" : ""))) {
            cluster.start();
            String topic = "rollback";
            Set<String> holes;
            Set<String> afterTheReset;
            try (PulsarClient client = cluster.client();
                 Consumer<String> held = subscribe(client, topic, "held", SubscriptionType.Shared);
                 Consumer<String> reset = subscribe(client, topic, "reset", SubscriptionType.Exclusive);
                 Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                         .create()) {
                for (int i = 0; i < MESSAGES; i++) {
                    producer.sendAsync(value(i));
                }
                producer.flush();
                holes = ackAllBut(held, i -> i % 3 == 0);
                afterTheReset = ackAfterAReset(reset);
            }
            for (Cluster.Broker broker : cluster.brokers()) {
                broker.stop();
            }
            for (Cluster.Broker broker : cluster.brokers()) {
                homes.rollback(broker.home);
                broker.installed("upstream");
                cluster.startBroker(broker);
            }
            try (PulsarClient client = cluster.client()) {
                Standalone.publishSentinel(client, topic);
                Set<String> heldAgain = redelivered(client, topic, "held", SubscriptionType.Shared);
                Set<String> resetAgain = redelivered(client, topic, "reset", SubscriptionType.Exclusive);
                System.out.printf("[cluster %s, scenario e, rollback ours -> upstream] held: %d not acked, %d"
                        + " delivered again; reset: %d not acked after the reset, %d delivered again%n", LINE,
                        holes.size(), heldAgain.size(), afterTheReset.size(), resetAgain.size());
                assertEquals(heldAgain, holes, "held: what upstream delivers again after the rollback");
                assertEquals(resetAgain, afterTheReset, "reset: what upstream delivers again after the rollback");
            }
        }
    }

    /** Receives every message, acks with receipts all but {@code hole}s; returns the holes. */
    private static Set<String> ackAllBut(Consumer<String> consumer, IntPredicate hole)
            throws Exception {
        List<CompletableFuture<Void>> receipts = new ArrayList<>();
        Set<String> holes = new TreeSet<>();
        for (int i = 0; i < MESSAGES; i++) {
            Message<String> m = consumer.receive(30, TimeUnit.SECONDS);
            assertNotNull(m, "message " + i + " not received");
            if (hole.test(index(m))) {
                holes.add(m.getValue());
            } else {
                receipts.add(consumer.acknowledgeAsync(m));
            }
        }
        CompletableFuture.allOf(receipts.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
        return holes;
    }

    /**
     * Acks cumulatively up to message 199, seeks back to message 100, receives again and acks cumulatively up to 149;
     * returns 150 to 299, which the subscription still owes.
     */
    private static Set<String> ackAfterAReset(Consumer<String> consumer) throws Exception {
        MessageId seekTo = null;
        Message<String> m = null;
        for (int i = 0; i < 200; i++) {
            m = consumer.receive(30, TimeUnit.SECONDS);
            assertNotNull(m, "message " + i + " not received");
            seekTo = i == 100 ? m.getMessageId() : seekTo;
        }
        consumer.acknowledgeCumulativeAsync(m).get(60, TimeUnit.SECONDS);
        consumer.seek(seekTo);
        m = consumer.receive(30, TimeUnit.SECONDS);
        assertNotNull(m, "nothing received after the reset");
        // Whether a seek to a message id delivers that message again differs between lines: either shows the reset.
        assertTrue(Set.of(value(100), value(101)).contains(m.getValue()), "the reset did not take effect: "
                + m.getValue());
        while (index(m) < 149) {
            m = consumer.receive(30, TimeUnit.SECONDS);
            assertNotNull(m, "not received after the reset");
        }
        consumer.acknowledgeCumulativeAsync(m).get(60, TimeUnit.SECONDS);
        return IntStream.range(150, MESSAGES).mapToObj(ClusterUpgradeTest::value)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private static Set<String> redelivered(PulsarClient client, String topic, String subscription,
                                           SubscriptionType type) throws Exception {
        try (Consumer<String> consumer = subscribe(client, topic, subscription, type)) {
            return new TreeSet<>(Standalone.receiveUntilSentinel(consumer));
        }
    }

    private static Consumer<String> subscribe(PulsarClient client, String topic, String subscription,
                                              SubscriptionType type) throws Exception {
        return client.newConsumer(Schema.STRING).topic(topic).subscriptionName(subscription).subscriptionType(type)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).isAckReceiptEnabled(true)
                .subscribe();
    }

    private static String value(int i) {
        return String.format("m-%03d", i);
    }

    private static int index(Message<String> m) {
        return Integer.parseInt(m.getValue().substring(2));
    }
}
