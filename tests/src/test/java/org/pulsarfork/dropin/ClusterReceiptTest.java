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
import static org.testng.Assert.assertNotNull;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.common.util.FutureUtil;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Ack receipts on a real cluster ({@link Cluster}: ZooKeeper, three bookies, two brokers of one jar set), with the
 * mark-delete limiter at 0.1/s and, on 4.0.8 and 4.2.4, {@code ackReceiptWaitsForPersistence=true} (upstream's broker
 * ignores the key; 5.0.0-M1 needs none). The oracle of both scenarios: no receipted message is delivered again on
 * ours, and none is lost (each message either got a receipt or comes again). Each scenario checks that it reached its
 * state, and is reported skipped ("inconclusive"), never passed, when it did not: the other broker owns the topic
 * afterwards; in a, upstream delivers receipted messages again (the kill came before the writes); in b, the resumed
 * broker answered acks (they reached it before its topic moved).
 * <ul>
 *   <li>a. kill -9 of the topic's owner as soon as the last of a burst of receipts arrived;</li>
 *   <li>b. the owner paused (SIGSTOP) past its metadata session timeout with acks sent to it, the other broker
 *   takes the topic over, then SIGCONT: the resumed broker answers the acks it finds on its connections.</li>
 * </ul>
 * In CI on 4.0.8, scenario a only; a and b in the long run, on every line ({@code -Dcluster.long=true}, README).
 */
@Test(groups = FORK_ONLY)
public class ClusterReceiptTest {
    private static final Duration TAKEOVER = Duration.ofSeconds(120);
    private static final int PAUSED_ACKS = 200;
    // Scenario b takes about a minute of two jar sets' takeovers: outside CI's budget, in the long run.
    private static final boolean PAUSE = Boolean.getBoolean("cluster.long");
    private StandaloneHomes homes;
    private final Map<String, int[]> results = new LinkedHashMap<>();

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        // CI runs it on one line (cluster.ci, set on 4.0.8); the long run on every line.
        homes = StandaloneHomes.unpack("cluster-receipt", Boolean.getBoolean("cluster.ci") ? "cluster.ci"
                : "cluster.long", false);
    }

    public void noReceiptedAckIsDeliveredAgainAfterTheOwnerIsKilledOrPaused() throws Exception {
        for (String jars : new String[] {"upstream", "ours"}) {
            try (Cluster cluster = new Cluster(homes.work().resolve(jars), List.of(
                    new String[] {jars, homes.home(jars, "home-" + jars + "-a").toString()},
                    new String[] {jars, homes.home(jars, "home-" + jars + "-b").toString()}),
                    settings())) {
                cluster.start();
                results.put("a " + jars, killTheOwnerRightAfterReceipts(cluster, "killed-" + jars));
                if (PAUSE) {
                    results.put("b " + jars, pauseTheOwnerWithAcksInFlight(cluster, "paused-" + jars));
                }
            }
        }
        results.forEach((run, r) -> System.out.printf("[cluster %s, scenario %s jars] receipted: %d; receipted and"
                + " delivered again: %d; lost: %d; answered by the broker: %d%n", LINE, run, r[0], r[1], r[2], r[3]));
        for (String scenario : PAUSE ? new String[] {"a", "b"} : new String[] {"a"}) {
            assertEquals(results.get(scenario + " ours")[1], 0,
                    scenario + ", ours: receipted messages delivered again");
            assertEquals(results.get(scenario + " ours")[2], 0, scenario + ", ours: messages lost");
            assertEquals(results.get(scenario + " upstream")[2], 0, scenario + ", upstream: messages lost");
        }
        // Upstream's 4.x answers before the write, as does a 5.0.0-M1 cursor under its limiter (#26484): a kill
        // that came before the writes shows as receipted messages delivered again.
        if (results.get("a upstream")[1] == 0) {
            throw new SkipException("inconclusive: in scenario a upstream delivered no receipted message again, so"
                    + " the kill did not come before the acks' writes");
        }
        // Upstream's 5.0.0-M1 answers the paused broker's acks with errors, as ours: what shows that the scenario
        // reached its state is that the resumed broker answered acks at all.
        for (String jars : PAUSE ? new String[] {"upstream", "ours"} : new String[0]) {
            if (results.get("b " + jars)[3] == 0) {
                throw new SkipException("inconclusive: in scenario b the resumed broker answered no ack (" + jars
                        + " jars): the acks did not reach it before its topic moved");
            }
        }
    }

    private static String settings() {
        return "managedLedgerDefaultMarkDeleteRateLimit=0.1\n"
                + (LINE.startsWith("4.") ? "ackReceiptWaitsForPersistence=true\n" : "");
    }

    /** Scenario a: {receipted, receipted and delivered again, lost, acks answered}. */
    private static int[] killTheOwnerRightAfterReceipts(Cluster cluster, String topic) throws Exception {
        StandaloneKill9Test.ThrottledAcks acks = new StandaloneKill9Test.ThrottledAcks(topic);
        Cluster.Broker[] owner = {null};
        try (PulsarClient client = cluster.client()) {
            acks.publishAndAck(client, () -> {
                owner[0] = cluster.owner(cluster.brokers().get(0), topic);
                return owner[0].get("/admin/v2/persistent/public/default/" + topic + "/internalStats");
            });
        }
        owner[0].kill9();
        Cluster.Broker other = cluster.other(owner[0]);
        cluster.awaitOwner(other, topic, TAKEOVER);
        int redelivered;
        try (PulsarClient client = cluster.client()) {
            Standalone.publishSentinel(client, topic);
            redelivered = acks.redelivered(client, StandaloneKill9Test.ThrottledAcks.SHARED)
                    + acks.redelivered(client, StandaloneKill9Test.ThrottledAcks.CUMULATIVE);
        }
        // The killed broker comes back for the next scenario, on the same bookies and metadata.
        cluster.startBroker(owner[0]);
        // Every message was acked with a receipt; the sentinel came after them: none can be lost here.
        int receipted = 2 * (StandaloneKill9Test.ThrottledAcks.MESSAGES + 1);
        return new int[] {receipted, redelivered, 0, receipted};
    }

    /** Scenario b: {receipted, receipted and delivered again, lost, acks the resumed broker answered}. */
    private static int[] pauseTheOwnerWithAcksInFlight(Cluster cluster, String topic) throws Exception {
        Set<String> receipted = new TreeSet<>();
        Set<String> all = new TreeSet<>();
        int answeredByTheResumedBroker = 0;
        Cluster.Broker owner;
        try (PulsarClient client = cluster.client();
             Consumer<String> consumer = subscribe(client, topic);
             Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                     .create()) {
            owner = cluster.owner(cluster.brokers().get(0), topic);
            assertNotNull(owner, "no owner of " + topic);
            // The first ack takes the limiter's permit and creates the cursor's ledger (see ThrottledAcks).
            producer.send("first");
            consumer.acknowledge(consumer.receive(30, TimeUnit.SECONDS));
            for (int i = 0; i < PAUSED_ACKS; i++) {
                producer.sendAsync("m-" + i);
            }
            producer.flush();
            List<Message<String>> received = new ArrayList<>();
            for (int i = 0; i < PAUSED_ACKS; i++) {
                Message<String> m = consumer.receive(30, TimeUnit.SECONDS);
                assertNotNull(m, "message " + i + " not received");
                received.add(m);
                all.add(m.getValue());
            }
            Cluster.Broker other = cluster.other(owner);
            owner.pause();
            List<CompletableFuture<Void>> answers = new ArrayList<>();
            try {
                for (Message<String> m : received) {
                    answers.add(consumer.acknowledgeAsync(m));
                }
                cluster.awaitOwner(other, topic, TAKEOVER);
            } finally {
                owner.resume();
            }
            // Each ack is answered by the resumed broker, fails with the connection, or times out on the client.
            CompletableFuture.allOf(answers.stream().map(a -> a.handle((v, e) -> null))
                    .toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
            Map<String, Integer> failures = new TreeMap<>();
            for (int i = 0; i < received.size(); i++) {
                Throwable failure = answers.get(i).handle((v, e) -> e).join();
                if (failure == null) {
                    receipted.add(received.get(i).getValue());
                    answeredByTheResumedBroker++;
                } else {
                    String why = String.valueOf(FutureUtil.unwrapCompletionException(failure));
                    failures.merge(why, 1, Integer::sum);
                    // An error response names the broker that sent it; a timeout or a lost connection does not.
                    answeredByTheResumedBroker += why.contains("errorMsg") && why.contains(":" + owner.port + "\"")
                            ? 1 : 0;
                }
            }
            System.out.printf("[cluster %s, scenario b, %s] acks answered with an error: %s; the paused broker's"
                    + " WARN lines for failed ack writes: %d%n", LINE, owner, failures,
                    owner.log().lines().filter(l -> l.contains(" WARN ") && l.contains("Failed to delete message"))
                            .count());
        }
        Set<String> again = new TreeSet<>();
        try (PulsarClient client = cluster.client()) {
            Standalone.publishSentinel(client, topic);
            try (Consumer<String> consumer = subscribe(client, topic)) {
                again.addAll(Standalone.receiveUntilSentinel(consumer));
            }
        }
        Set<String> receiptedAgain = new TreeSet<>(receipted);
        receiptedAgain.retainAll(again);
        Set<String> lost = new TreeSet<>(all);
        lost.removeAll(receipted);
        lost.removeAll(again);
        // The paused broker comes back as a member of the cluster; wait until it serves again for what follows.
        await().atMost(TAKEOVER).ignoreExceptions().until(() -> owner.send("GET", "/admin/v2/brokers/health")
                .statusCode() == 200);
        return new int[] {receipted.size(), receiptedAgain.size(), lost.size(), answeredByTheResumedBroker};
    }

    private static Consumer<String> subscribe(PulsarClient client, String topic) throws Exception {
        return client.newConsumer(Schema.STRING).topic(topic).subscriptionName("paused")
                .subscriptionType(SubscriptionType.Shared)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .isAckReceiptEnabled(true).subscribe();
    }
}
