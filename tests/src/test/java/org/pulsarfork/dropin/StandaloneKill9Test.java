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
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.awaitility.core.ConditionTimeoutException;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Scenarios a and b of docs/drop-in.md, in real broker processes: a standalone of this line (4.0.8: upstream's server
 * distribution; 4.2.4, 5.0.0-M1: a home assembled from upstream's Maven artifacts, {@link Standalone}), once with
 * upstream's jars and once with ours installed by {@code bin/drop-in}.
 * Both scenarios share each jar set's one {@code kill -9} and restart on the same data (a standalone takes most
 * of the time).
 * <ul>
 * <li>b: two compactions inside one mark-delete limiter period (standalone.conf: 0.1/s), the previous compacted
 * ledger deleted, then the crash: the compacted view must hold the latest value of every key. Upstream completed
 * the throttled compaction ack without writing it (#26484): the restarted broker recovers a compaction cursor
 * naming the deleted ledger, and the topic does not load.</li>
 * <li>a: acks with ack receipts at full speed under the same limiter, on a shared subscription (individual acks)
 * and a failover one (cumulative acks), and the crash more than one limiter period after the last receipt. On 4.x
 * a receipt answers the ack before any write, on both jar sets (on 5.0.0-M1 ours answers after the write); ours
 * writes a throttled ack within one limiter period, so nothing acked is redelivered after the restart. Upstream
 * writes it only with a later ack the limiter lets through, or the periodic cursor flush (60 s): what it
 * redelivers is measured. A long run only
 * ({@code -Dstandalone.long=true}); CI runs scenario b.</li>
 * </ul>
 */
@Test(groups = FORK_ONLY)
public class StandaloneKill9Test {
    private static final int KEYS = 3;
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final Duration READABLE = Duration.ofSeconds(60);
    // Once the restarted broker has loaded the topic, how long a compacted view may stay empty or failing.
    private static final Duration SETTLED = Duration.ofSeconds(15);
    private static final String NO_SUCH_LEDGER = "No such ledger exists";
    // Views that are not a compacted view: the topic does not load, a read failed, the topic never answered.
    private static final String UNLOADABLE = "unloadable";
    private static final String UNREADABLE = "error";
    private static final String INCONCLUSIVE = "inconclusive";
    private static final Pattern COMPACTED_LEDGER =
            Pattern.compile("\"compactedLedger\"\\s*:\\s*\\{[^}]*?\"ledgerId\"\\s*:\\s*(-?\\d+)");
    private static final Pattern CURSOR_LEDGER = Pattern.compile("\"cursorLedger\"\\s*:\\s*(-?\\d+)");
    private static final Pattern STATUS = Pattern.compile("\"status\"\\s*:\\s*\"(\\w+)\"");
    // CompactedTopicImpl logs this at debug once it deleted the previous compacted ledger; the test's log
    // configuration turns that logger on.
    private static final String PREVIOUS_LEDGER_DELETED = "Compacted topic ledger deleted successfully";

    // Scenario a waits out a limiter period before the kill and reads two subscriptions after it: about a minute
    // of CI's budget, so it runs in the long run only.
    private static final boolean RECEIPTS = Boolean.getBoolean("standalone.long");
    private StandaloneHomes homes;

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        // In CI on 4.2.4 and 5.0.0-M1 (standalone.crash, false on 4.0.8); the long run runs it on every line.
        homes = StandaloneHomes.unpack("standalone-test", RECEIPTS ? "standalone.long" : "standalone.crash", true);
    }

    public void aKill9AfterTwoCompactionsInOneLimiterPeriodKeepsTheCompactedViewOnOurs() throws Exception {
        Map<String, String> latest = Map.of("k0", "v2-9", "k1", "v2-7", "k2", "v2-8");
        System.out.printf("[standalone %s] compacted view after kill -9 and restart: upstream %s, ours %s%n",
                LINE, afterRestart("upstream").view, afterRestart("ours").view);
        assertEquals(afterRestart("ours").view, latest, "ours: the compacted view after the restart");
        // Broken, not merely slow or unreadable: the topic does not load for the deleted ledger its compaction
        // cursor names, or it loads and serves a wrong view.
        Map<String, String> upstream = afterRestart("upstream").view;
        assertTrue(upstream.equals(Map.of(UNLOADABLE, NO_SUCH_LEDGER)) || (!upstream.isEmpty()
                        && !upstream.containsKey(UNREADABLE) && !upstream.containsKey(INCONCLUSIVE)
                        && !upstream.equals(latest)),
                "upstream: expected the compacted view broken after the restart (#26484): " + upstream);
    }

    public void aKill9OneLimiterPeriodAfterTheLastAckReceiptRedeliversNothingOnOurs() throws Exception {
        if (!RECEIPTS) {
            throw new SkipException("scenario a is a long run: -Dstandalone.long=true (README)");
        }
        for (String jars : new String[] {"upstream", "ours"}) {
            AfterRestart r = afterRestart(jars);
            System.out.printf("[standalone %s, %s jars] acked with a receipt before kill -9: %d individually"
                            + " (shared), %d cumulatively (failover); redelivered after the restart: %d and %d%n",
                    LINE, jars, ThrottledAcks.MESSAGES + 1, ThrottledAcks.MESSAGES + 1, r.redeliveredIndividual,
                    r.redeliveredCumulative);
        }
        AfterRestart ours = afterRestart("ours");
        assertEquals(ours.redeliveredIndividual, 0, "ours: individually acked messages redelivered after kill -9");
        assertEquals(ours.redeliveredCumulative, 0, "ours: cumulatively acked messages redelivered after kill -9");
    }

    /** What the restarted broker of one jar set serves; both scenarios run once per jar set. */
    private static final class AfterRestart {
        Map<String, String> view;
        int redeliveredIndividual;
        int redeliveredCumulative;
    }

    private final Map<String, AfterRestart> afterRestart = new TreeMap<>();
    private final Map<String, Exception> failedRun = new TreeMap<>();

    /** Runs once per jar set, for both test methods; a failed run is not repeated for the second. */
    private AfterRestart afterRestart(String jars) throws Exception {
        if (failedRun.containsKey(jars)) {
            throw new IllegalStateException("the " + jars + " run failed", failedRun.get(jars));
        }
        AfterRestart r = afterRestart.get(jars);
        if (r == null) {
            try {
                r = killAndRestart(jars);
            } catch (Exception | AssertionError e) {
                failedRun.put(jars, e instanceof Exception ? (Exception) e : new Exception(e));
                throw e;
            }
            afterRestart.put(jars, r);
        }
        return r;
    }

    /** Both scenarios on one jar set, one kill -9 and restart between their two halves. */
    private AfterRestart killAndRestart(String jars) throws Exception {
        Standalone broker = new Standalone(homes.home(jars));
        String topic = "compacted-" + jars;
        ThrottledAcks acks = new ThrottledAcks("acked-" + jars);
        try {
            broker.start();
            long lastReceipt = ackAndCompactTwice(broker, jars, topic, acks);
            killOnceThrottledAcksHadTheirPeriod(broker, lastReceipt);
            broker.start();
            return readAfterRestart(broker, jars, topic, acks);
        } finally {
            broker.kill9();
        }
    }

    /** The halves before the kill; returns when (System.nanoTime) the last ack receipt arrived. */
    private long ackAndCompactTwice(Standalone broker, String jars, String topic, ThrottledAcks acks)
            throws Exception {
        long lastReceipt = System.nanoTime();
        try (PulsarClient client = broker.client()) {
            if (RECEIPTS) {
                lastReceipt = acks.publishAndAck(client,
                        () -> broker.get("/admin/v2/persistent/public/default/" + acks.topic + "/internalStats"));
            }
            publish(client, topic, "v1");
            long first = compact(broker, topic, -1);
            publish(client, topic, "v2");
            long second = compact(broker, topic, first);
            await().atMost(WAIT).until(() -> broker.log().contains(PREVIOUS_LEDGER_DELETED));
            System.out.printf("[standalone %s, %s jars] compacted ledgers %d then %d; the first deleted%n",
                    LINE, jars, first, second);
        }
        return lastReceipt;
    }

    private static void killOnceThrottledAcksHadTheirPeriod(Standalone broker, long lastReceipt) throws Exception {
        // Past one limiter period (10 s) since the last receipt, with a margin: the time ours has to write.
        // Scenario b alone kills at once: the compaction cursor's writes are never throttled on ours.
        long killAt = lastReceipt + (RECEIPTS ? TimeUnit.SECONDS.toNanos(15) : 0);
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
                .until(() -> System.nanoTime() >= killAt);
        broker.kill9();
    }

    /** The halves after the restart, on the same data. */
    private static AfterRestart readAfterRestart(Standalone broker, String jars, String topic, ThrottledAcks acks)
            throws Exception {
        AfterRestart r = new AfterRestart();
        try (PulsarClient client = broker.client()) {
            r.view = compactedViewOnceReadable(broker, client, topic);
            if (RECEIPTS) {
                Standalone.publishSentinel(client, acks.topic);
                r.redeliveredIndividual = acks.redelivered(client, ThrottledAcks.SHARED);
                r.redeliveredCumulative = acks.redelivered(client, ThrottledAcks.CUMULATIVE);
            }
            // A result counts only from a broker that stores and reads: a new topic's message, read back.
            assertWritesAndReads(client, "health-" + jars);
            return r;
        }
    }

    /**
     * Scenario a's traffic: messages consumed at full speed by two subscriptions, every message acked
     * individually on one, every tenth (and the last) cumulatively on the other, each ack waiting for its receipt.
     */
    static final class ThrottledAcks {
        static final int MESSAGES = 200;
        static final String SHARED = "shared";
        static final String CUMULATIVE = "cumulative";
        final String topic;

        ThrottledAcks(String topic) {
            this.topic = topic;
        }

        /**
         * Returns when (System.nanoTime) the last receipt arrived. A first message, acked on both subscriptions,
         * takes the limiter's permit and creates each cursor's ledger: acked while that creation runs, the burst
         * would be written by the creation itself, past the limiter.
         */
        long publishAndAck(PulsarClient client, Callable<String> internalStats) throws Exception {
            try (Consumer<String> shared = subscribe(client, SHARED, SubscriptionType.Shared);
                 Consumer<String> cumulative = subscribe(client, CUMULATIVE, SubscriptionType.Failover);
                 Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                         .create()) {
                producer.send("first");
                shared.acknowledge(shared.receive(30, TimeUnit.SECONDS));
                cumulative.acknowledgeCumulative(cumulative.receive(30, TimeUnit.SECONDS));
                await().atMost(WAIT).until(() -> {
                    Matcher ledger = CURSOR_LEDGER.matcher(internalStats.call());
                    int created = 0;
                    while (ledger.find()) {
                        created += Long.parseLong(ledger.group(1)) >= 0 ? 1 : 0;
                    }
                    return created == 2;
                });
                for (int i = 0; i < MESSAGES; i++) {
                    producer.sendAsync("m-" + i);
                }
                producer.flush();
                List<CompletableFuture<Void>> receipts = new ArrayList<>();
                for (int i = 0; i < MESSAGES; i++) {
                    Message<String> m = shared.receive(30, TimeUnit.SECONDS);
                    assertTrue(m != null, "shared: message " + i + " not received");
                    receipts.add(shared.acknowledgeAsync(m));
                    Message<String> c = cumulative.receive(30, TimeUnit.SECONDS);
                    assertTrue(c != null, "failover: message " + i + " not received");
                    if (i % 10 == 9 || i == MESSAGES - 1) {
                        receipts.add(cumulative.acknowledgeCumulativeAsync(c));
                    }
                }
                // Each future completes with its receipt (or fails): every ack here was answered.
                CompletableFuture.allOf(receipts.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
                return System.nanoTime();
            }
        }

        /** The messages the subscription gets again after the restart: every one had been acked. */
        int redelivered(PulsarClient client, String subscription) throws Exception {
            SubscriptionType type = SHARED.equals(subscription) ? SubscriptionType.Shared : SubscriptionType.Failover;
            Set<String> again = new TreeSet<>();
            // "first" was acked too, and is counted if it comes back.
            try (Consumer<String> consumer = subscribe(client, subscription, type)) {
                again.addAll(Standalone.receiveUntilSentinel(consumer));
            }
            return again.size();
        }

        private Consumer<String> subscribe(PulsarClient client, String subscription, SubscriptionType type)
                throws Exception {
            return client.newConsumer(Schema.STRING).topic(topic).subscriptionName(subscription)
                    .subscriptionType(type).subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                    .isAckReceiptEnabled(true).subscribe();
        }
    }

    private static void assertWritesAndReads(PulsarClient client, String topic) throws Exception {
        try (Reader<String> reader = client.newReader(Schema.STRING).topic(topic).startMessageId(MessageId.earliest)
                .create();
             Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).create()) {
            producer.send("probe");
            Message<String> read = reader.readNext(30, TimeUnit.SECONDS);
            assertTrue(read != null && "probe".equals(read.getValue()), "the restarted broker does not read back");
        }
    }

    private static void publish(PulsarClient client, String topic, String value) throws Exception {
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            for (int i = 0; i < 10; i++) {
                producer.newMessage().key("k" + (i % KEYS)).value(value + "-" + i).send();
            }
        }
    }

    private long compact(Standalone broker, String topic, long previous) throws Exception {
        String path = "/admin/v2/persistent/public/default/" + topic;
        HttpResponse<String> triggered = broker.send("PUT", path + "/compaction", null);
        assertEquals(triggered.statusCode() / 100, 2, triggered.body());
        long[] compacted = {-1};
        await().atMost(WAIT).until(() -> {
            String status = broker.get(path + "/compaction");
            assertTrue(!status.contains("\"ERROR\""), "compaction failed: " + status);
            Matcher ledger = COMPACTED_LEDGER.matcher(broker.get(path + "/internalStats"));
            compacted[0] = ledger.find() ? Long.parseLong(ledger.group(1)) : -1;
            Matcher state = STATUS.matcher(status);
            return state.find() && "SUCCESS".equals(state.group(1)) && compacted[0] != -1 && compacted[0] != previous;
        });
        return compacted[0];
    }

    /**
     * The compacted view, once the restarted broker has loaded the topic, read again while reads fail or find
     * nothing, for up to {@link #SETTLED} (with the RocksDB metadata store, 4.0.8's reads also failed with "bookie
     * is unknown" for a while). A topic that does not load because a ledger it names is gone (upstream: the
     * compaction cursor recovered the deleted compacted ledger) is {@code {unloadable=...}}; one that has neither
     * loaded nor failed so after {@link #READABLE} is {@code {inconclusive=...}}, which no assertion accepts.
     */
    private static Map<String, String> compactedViewOnceReadable(Standalone broker, PulsarClient client, String topic)
            throws Exception {
        String[] unloadable = {null};
        try {
            await().atMost(READABLE).pollInterval(Duration.ofMillis(500)).ignoreExceptions().until(() -> {
                HttpResponse<String> stats = broker.send("GET",
                        "/admin/v2/persistent/public/default/" + topic + "/internalStats", null);
                if (stats.body().contains(NO_SUCH_LEDGER)) {
                    unloadable[0] = NO_SUCH_LEDGER;
                }
                return stats.statusCode() == 200 || unloadable[0] != null;
            });
        } catch (ConditionTimeoutException e) {
            return Map.of(INCONCLUSIVE, "the topic neither loaded nor failed within " + READABLE);
        }
        if (unloadable[0] != null) {
            return Map.of(UNLOADABLE, unloadable[0]);
        }
        List<Map<String, String>> view = new ArrayList<>(List.of(Map.of()));
        try {
            await().atMost(SETTLED).pollInterval(Duration.ofMillis(500)).until(() -> {
                view.set(0, compactedView(client, topic));
                return !view.get(0).isEmpty() && !view.get(0).containsKey(UNREADABLE);
            });
        } catch (ConditionTimeoutException e) {
            // Empty or unreadable throughout: returned as it is.
        }
        return view.get(0);
    }

    /**
     * Everything a compacted reader gets from the start, up to the topic's last message (nothing is published after
     * the restart, so no wait for more); an unreadable view yields fewer keys.
     */
    private static Map<String, String> compactedView(PulsarClient client, String topic) throws Exception {
        Map<String, String> view = new TreeMap<>();
        try (Reader<String> reader = client.newReader(Schema.STRING).topic(topic).readCompacted(true)
                .startMessageId(MessageId.earliest).create()) {
            Message<String> message;
            while (reader.hasMessageAvailable() && (message = reader.readNext(10, TimeUnit.SECONDS)) != null) {
                view.merge(message.getKey(), message.getValue(), (older, newer) -> older + "," + newer);
            }
        } catch (Exception e) {
            view.put(UNREADABLE, e.getClass().getSimpleName());
        }
        return view;
    }
}
