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
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.dropin.Commands.LINE;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.impl.MessageIdImpl;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Scenario c of docs/drop-in.md, in real broker processes (a standalone of this line, upstream's jars and ours):
 * {@code reset-cursor}, or the client's {@code seek} every other round, while a consumer acks at full speed under
 * {@code standalone.conf}'s mark-delete limiter (0.1/s), {@code kill -9} at a random moment after the reset
 * answered, restart on the same data. The subscription must resume from the reset position: every message at or
 * after it comes back, except those acked after the reset was sent. A stress
 * count, repeated {@code -Dstandalone.repeats} times per jar set (default 3), not a timing assertion: the
 * deterministic proof is the unit bench ({@code CursorResetRaceBenchTest}). A long run only
 * ({@code -Dstandalone.long=true}, README).
 */
@Test(groups = FORK_ONLY)
public class StandaloneResetUnderLoadTest {
    private static final int MESSAGES = 5_000;
    private static final Duration WAIT = Duration.ofSeconds(60);
    private StandaloneHomes homes;

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        homes = StandaloneHomes.unpack("standalone-reset", "standalone.long", false);
    }

    public void aResetUnderLoadSurvivesAKill9AtARandomMomentOnOurs() throws Exception {
        int repeats = Integer.getInteger("standalone.repeats", 3);
        long seed = Long.getLong("standalone.seed", 0L);
        seed = seed != 0 ? seed : System.currentTimeMillis();
        Map<String, List<Integer>> lostPerRound = new TreeMap<>();
        for (String jars : new String[] {"upstream", "ours"}) {
            lostPerRound.put(jars, rounds(jars, repeats, new Random(seed)));
        }
        for (Map.Entry<String, List<Integer>> e : lostPerRound.entrySet()) {
            long violating = e.getValue().stream().filter(lost -> lost > 0).count();
            System.out.printf("[standalone %s, %s jars] reset under load, kill -9 (seed %d): %d of %d rounds lost"
                    + " messages at or after the reset position; lost per round: %s%n", LINE, e.getKey(), seed,
                    violating, repeats, e.getValue());
        }
        assertTrue(lostPerRound.get("ours").stream().allMatch(lost -> lost == 0),
                "ours: a kill -9 after a reset under load lost messages at or after the reset position: "
                        + lostPerRound.get("ours"));
    }

    /** The rounds on one jar set, one broker process per round; returns the messages each round lost. */
    private List<Integer> rounds(String jars, int repeats, Random random) throws Exception {
        Standalone broker = new Standalone(homes.home(jars));
        List<Integer> lost = new ArrayList<>();
        try {
            broker.start();
            for (int round = 0; round < repeats; round++) {
                // Every other round resets with the client's seek instead of the admin API's reset-cursor.
                Round r = new Round("reset-" + jars + "-" + round, random, round % 2 == 1);
                try (PulsarClient client = broker.client()) {
                    r.ackResetAndKill(client, broker);
                }
                broker.start();
                try (PulsarClient client = broker.client()) {
                    lost.add(r.lost(client));
                }
                System.out.printf("[standalone %s, %s jars] round %d: %s%n", LINE, jars, round, r);
            }
        } finally {
            broker.kill9();
        }
        return lost;
    }

    /** One topic: publish, ack at full speed, reset while acking, kill -9; then count what did not come back. */
    private static final class Round {
        private final String topic;
        private final Random random;
        private final boolean clientSeek;
        private final List<CompletableFuture<MessageId>> ids = new ArrayList<>();
        private final Set<Integer> ackedAfterReset = ConcurrentHashMap.newKeySet();
        private final List<CompletableFuture<Void>> receiptsBeforeReset = new ArrayList<>();
        private final AtomicInteger acked = new AtomicInteger();
        private volatile boolean resetSent;
        private volatile boolean stop;
        private int resetTo;
        private int ackedAtReset;
        private int highestAcked = -1;
        private int highestAckedBeforeReset = -1;
        private int checked;
        private int publishedAtReset;
        private long killDelayMillis;
        private int redelivered;
        private int lost;

        Round(String topic, Random random, boolean clientSeek) {
            this.topic = topic;
            this.random = random;
            this.clientSeek = clientSeek;
        }

        void ackResetAndKill(PulsarClient client, Standalone broker) throws Exception {
            Consumer<String> consumer = subscribe(client);
            Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                    .create();
            // Published while the consumer acks, so that acks are in flight when the reset comes.
            Thread publisher = new Thread(() -> publish(producer), "publisher-" + topic);
            publisher.start();
            Thread acker = new Thread(() -> ackAtFullSpeed(consumer), "acker-" + topic);
            acker.start();
            try {
                int resetAfter = 400 + random.nextInt(MESSAGES / 4);
                await().atMost(WAIT).until(() -> acked.get() >= resetAfter);
                awaitTheAcksBeforeTheReset();
                resetTo = random.nextInt(resetAfter / 2);
                reset(consumer, broker, resetTarget());
                killAfterARandomDelay(broker);
            } finally {
                stop = true;
                acker.join(TimeUnit.SECONDS.toMillis(60));
                publisher.join(TimeUnit.SECONDS.toMillis(60));
                consumer.closeAsync();
                producer.closeAsync();
            }
            assertTrue(!acker.isAlive() && !publisher.isAlive(), "the acker or the publisher did not stop");
        }

        private void awaitTheAcksBeforeTheReset() throws Exception {
            // From here an ack is excused: it may land after the reset. Those issued before are applied before it
            // (on 4.x a receipt answers once the ack is applied).
            CompletableFuture<?>[] before;
            synchronized (receiptsBeforeReset) {
                resetSent = true;
                before = receiptsBeforeReset.toArray(new CompletableFuture<?>[0]);
                ackedAtReset = acked.get();
                highestAckedBeforeReset = highestAcked;
            }
            CompletableFuture.allOf(before).get(30, TimeUnit.SECONDS);
        }

        private MessageIdImpl resetTarget() throws Exception {
            CompletableFuture<MessageId> targetSent;
            synchronized (ids) {
                publishedAtReset = ids.size();
                targetSent = ids.get(resetTo);
            }
            return (MessageIdImpl) targetSent.get(30, TimeUnit.SECONDS);
        }

        private void reset(Consumer<String> consumer, Standalone broker, MessageIdImpl target) throws Exception {
            if (clientSeek) {
                // Answered once the broker has reset the subscription, as reset-cursor is.
                consumer.seek(target);
            } else {
                HttpResponse<String> reset = broker.send("POST", "/admin/v2/persistent/public/default/" + topic
                        + "/subscription/s/resetcursor", "{\"ledgerId\":" + target.getLedgerId()
                        + ",\"entryId\":" + target.getEntryId() + ",\"partitionIndex\":-1,\"isExcluded\":false}");
                assertEquals(reset.statusCode() / 100, 2, "reset-cursor: " + reset.body());
            }
        }

        private void killAfterARandomDelay(Standalone broker) throws Exception {
            killDelayMillis = random.nextInt(2_000);
            long killAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(killDelayMillis);
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                    .until(() -> System.nanoTime() >= killAt);
            broker.kill9();
        }

        private void publish(Producer<String> producer) {
            for (int i = 0; i < MESSAGES && !stop; i++) {
                synchronized (ids) {
                    ids.add(producer.sendAsync("m-" + i));
                }
                if (i % 100 == 99) {
                    // Bounded ahead of the acks: a stream, not a backlog published at once.
                    int published = i;
                    try {
                        await().atMost(WAIT).until(() -> stop || acked.get() >= published - 300);
                    } catch (RuntimeException consumerStalled) {
                        return;
                    }
                }
            }
        }

        /** The messages whose publish the broker confirmed before the kill. */
        private Set<Integer> published() {
            Set<Integer> confirmed = new TreeSet<>();
            synchronized (ids) {
                for (int i = 0; i < ids.size(); i++) {
                    CompletableFuture<MessageId> f = ids.get(i);
                    if (f.isDone() && !f.isCompletedExceptionally()) {
                        confirmed.add(i);
                    }
                }
            }
            return confirmed;
        }

        /**
         * Acks every message as it comes. Once the reset is sent, only messages past the highest acked before it:
         * what the reset redelivers stays unacked, and must come back after the restart.
         */
        private void ackAtFullSpeed(Consumer<String> consumer) {
            try {
                while (!stop) {
                    Message<String> m = consumer.receive(200, TimeUnit.MILLISECONDS);
                    if (m == null) {
                        continue;
                    }
                    int index = Integer.parseInt(m.getValue().substring(2));
                    // One decision per ack, ordered with the test thread's: before the reset (awaited) or after.
                    synchronized (receiptsBeforeReset) {
                        if (!resetSent) {
                            receiptsBeforeReset.add(consumer.acknowledgeAsync(m));
                            highestAcked = Math.max(highestAcked, index);
                        } else if (index > highestAckedBeforeReset) {
                            ackedAfterReset.add(index);
                            consumer.acknowledgeAsync(m);
                        } else {
                            continue;
                        }
                    }
                    acked.incrementAndGet();
                }
            } catch (Exception e) {
                // The broker was killed under the consumer: the round is over.
            }
        }

        /** The messages at or after the reset position, not acked after the reset, that do not come back. */
        int lost(PulsarClient client) throws Exception {
            Set<Integer> again = new TreeSet<>();
            Standalone.publishSentinel(client, topic);
            try (Consumer<String> consumer = subscribe(client)) {
                for (String value : Standalone.receiveUntilSentinel(consumer)) {
                    again.add(Integer.parseInt(value.substring(2)));
                }
            }
            redelivered = again.size();
            Set<Integer> missing = new TreeSet<>();
            for (int i : published()) {
                if (i >= resetTo && !ackedAfterReset.contains(i)) {
                    checked++;
                    if (!again.contains(i)) {
                        missing.add(i);
                    }
                }
            }
            lost = missing.size();
            return lost;
        }

        private Consumer<String> subscribe(PulsarClient client) throws Exception {
            return client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s")
                    .subscriptionType(SubscriptionType.Shared)
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).isAckReceiptEnabled(true)
                    .subscribe();
        }

        @Override
        public String toString() {
            return String.format("%s: %d published and %d acked when the reset to m-%d was sent, kill -9 %d ms after it"
                            + " answered (%d published by then, %d acks after the reset sent), %d redelivered after the"
                            + " restart; %d checked (at or after the reset, not acked after it), %d lost",
                    clientSeek ? "seek" : "reset-cursor", publishedAtReset, ackedAtReset, resetTo, killDelayMillis,
                    published().size(), ackedAfterReset.size(), redelivered, checked, lost);
        }
    }
}
