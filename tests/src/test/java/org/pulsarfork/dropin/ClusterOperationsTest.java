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
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionType;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Operations on a real cluster ({@link Cluster}) under a steady load with ack receipts ({@link ReceiptedTraffic}),
 * each run with upstream's jars and with ours, the default mark-delete limiter (1/s) and, on 4.x,
 * {@code ackReceiptWaitsForPersistence=true}:
 * <ul>
 *   <li>c. the topic moved to the other broker and back, repeatedly (a bundle unload with a destination broker);</li>
 *   <li>f. a bookie killed (kill -9) while cursor-ledger writes are in flight, started again later.</li>
 * </ul>
 * After either, once the traffic stopped and its consumer received everything stored, the owner is killed, so that
 * what was receipted is read back by the other broker. The oracle: no stored message lost, the subscription drains,
 * and on ours no receipted message delivered again after the kill.
 * A scenario that did not reach its state (a move that did not happen, a bookie that was not in use) is reported
 * skipped, "inconclusive". A long run ({@code -Dcluster.long=true}, README).
 */
@Test(groups = FORK_ONLY)
public class ClusterOperationsTest {
    private static final Duration MOVE = Duration.ofSeconds(120);
    private static final int MOVES = 6;
    private static final int RATE = 50;
    private static final Duration OUTAGE = Duration.ofSeconds(15);
    private StandaloneHomes homes;
    private final Map<String, int[]> results = new LinkedHashMap<>();

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        homes = StandaloneHomes.unpack("cluster-operations", "cluster.long", false);
    }

    public void movesAndABookieCrashLoseNothingAndRedeliverNothingReceipted() throws Exception {
        for (String jars : new String[] {"upstream", "ours"}) {
            try (Cluster cluster = new Cluster(homes.work().resolve(jars), List.of(
                    new String[] {jars, homes.home(jars, "home-" + jars + "-a").toString()},
                    new String[] {jars, homes.home(jars, "home-" + jars + "-b").toString()}),
                    LINE.startsWith("4.") ? "ackReceiptWaitsForPersistence=true" : "")) {
                cluster.start();
                results.put("c " + jars, moveUnderLoad(cluster, "moved-" + jars));
                results.put("f " + jars, killABookieUnderLoad(cluster, "bookie-" + jars));
            }
        }
        results.forEach((run, r) -> System.out.printf("[cluster %s, scenario %s jars] stored: %d; received: %d;"
                + " receipted: %d; seen again by the traffic's consumer after its receipt: %d; lost: %d; failed"
                + " sends: %d; receipted and delivered again after the owner's kill: %d%n", LINE, run,
                r[0], r[1], r[2], r[3], r[4], r[5], r[6]));
        for (String run : results.keySet()) {
            assertEquals(results.get(run)[4], 0, run + ": stored messages never delivered");
        }
        assertEquals(results.get("c ours")[6], 0, "c, ours: receipted messages delivered again after the kill");
        assertEquals(results.get("f ours")[6], 0, "f, ours: receipted messages delivered again after the kill");
    }

    private static int[] moveUnderLoad(Cluster cluster, String topic) throws Exception {
        int[] counts;
        Set<String> receipted;
        try (PulsarClient client = cluster.client();
             ReceiptedTraffic traffic = new ReceiptedTraffic(client, topic, RATE)) {
            Cluster.Broker via = cluster.brokers().get(0);
            await().atMost(MOVE).ignoreExceptions().until(() -> cluster.owner(via, topic) != null);
            for (int i = 0; i < MOVES; i++) {
                Cluster.Broker other = cluster.other(cluster.owner(via, topic));
                if (!cluster.move(topic, other, MOVE)) {
                    throw new SkipException("inconclusive: move " + (i + 1) + " did not bring " + topic + " to "
                            + other);
                }
                // Traffic on the new owner before the next move.
                awaitReceipts(traffic, RATE);
            }
            counts = traffic.stopAndDrain();
            receipted = traffic.receipted();
        }
        return withReceiptedAfterAKill(cluster, topic, counts, receipted);
    }

    private static int[] killABookieUnderLoad(Cluster cluster, String topic) throws Exception {
        int[] counts;
        Set<String> receipted;
        try (PulsarClient client = cluster.client();
             ReceiptedTraffic traffic = new ReceiptedTraffic(client, topic, RATE)) {
            Cluster.Broker via = cluster.brokers().get(0);
            await().atMost(MOVE).ignoreExceptions().until(() -> cluster.owner(via, topic) != null
                    && traffic.receipted().size() > RATE);
            Cluster.Broker owner = cluster.owner(via, topic);
            Cluster.Server bookie = cluster.bookie(0);
            long errorsBefore = bookieErrors(cluster, owner, bookie);
            bookie.kill9();
            try {
                await().atMost(MOVE).until(() -> bookieErrors(cluster, owner, bookie) > errorsBefore);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                throw new SkipException("inconclusive: " + owner + " logged no failed write to the killed "
                        + bookie.name);
            }
            // The outage's length is the scenario, not an ordering: with ensemble 3 and no spare bookie, the
            // ledgers that had it must wait for it, the cursors' writes fail or fall back to the metadata store.
            await().pollDelay(OUTAGE).atMost(OUTAGE.plusSeconds(1)).until(() -> true);
            bookie.start();
            awaitReceipts(traffic, 2 * RATE);
            counts = traffic.stopAndDrain();
            receipted = traffic.receipted();
        }
        return withReceiptedAfterAKill(cluster, topic, counts, receipted);
    }

    /**
     * The traffic's counts, with one more: the receipted messages that the other broker delivers again after the
     * owner is killed (kill -9) once the traffic stopped and drained. Unlike what the traffic's
     * consumer sees again while topics move (a copy the new owner dispatched before the ack reached it can be taken
     * from the client's queue after the receipt), this counts only what no durable record held.
     */
    private static int[] withReceiptedAfterAKill(Cluster cluster, String topic, int[] counts, Set<String> receipted)
            throws Exception {
        Cluster.Broker owner = cluster.owner(cluster.brokers().get(0), topic);
        owner.kill9();
        cluster.awaitOwner(cluster.other(owner), topic, MOVE);
        Set<String> again = new TreeSet<>();
        try (PulsarClient client = cluster.client()) {
            Standalone.publishSentinel(client, topic);
            try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic)
                    .subscriptionName("traffic").subscriptionType(SubscriptionType.Shared).subscribe()) {
                again.addAll(Standalone.receiveUntilSentinel(consumer));
            }
        }
        again.retainAll(receipted);
        cluster.startBroker(owner);
        int[] withKill = Arrays.copyOf(counts, counts.length + 1);
        withKill[counts.length] = again.size();
        return withKill;
    }

    static void awaitReceipts(ReceiptedTraffic traffic, int more) {
        int now = traffic.receipted().size();
        await().atMost(MOVE).until(() -> traffic.receipted().size() >= now + more);
    }

    /** The owner's log lines that name the bookie's address at WARN or ERROR. */
    private static long bookieErrors(Cluster cluster, Cluster.Broker owner, Cluster.Server bookie) throws Exception {
        String address = "127.0.0.1:" + cluster.bookiePort(bookie);
        return owner.log().lines().filter(l -> (l.contains(" WARN ") || l.contains(" ERROR "))
                && l.contains(address)).count();
    }
}
