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
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * What {@code ackReceiptWaitsForPersistence} costs (4.x), on a real broker (our jars, a standalone): a backlog of
 * {@link #MESSAGES} messages consumed by one Shared consumer that acks each message asynchronously with a receipt,
 * with the setting off and on, under a mark-delete limiter of 1/s (the broker default) and 0.1/s (standalone.conf's),
 * set per namespace. Printed per run: the receipt latency (from the ack call to its answer) at the median and the
 * 99th percentile, and the consumer's throughput up to its last ack call and up to its last receipt. One run per
 * setting and rate, no threshold: a cost figure for {@code docs/drop-in.md}. A long run
 * ({@code -Dstandalone.long=true}, README).
 */
@Test(groups = FORK_ONLY)
public class StandaloneReceiptCostTest {
    private static final int MESSAGES = 20_000;
    private static final String[] RATES = {"1.0", "0.1"};
    private StandaloneHomes homes;

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        if (!LINE.startsWith("4.")) {
            throw new SkipException("5.0 answers receipts after persistence always (apache/pulsar#25528)");
        }
        homes = StandaloneHomes.unpack("standalone-receipt-cost", "standalone.long", false);
    }

    public void receiptLatencyAndThroughputWithTheSettingOffAndOn() throws Exception {
        for (String waits : new String[] {"false", "true"}) {
            Standalone broker = new Standalone(homes.home("ours", "cost-" + waits));
            broker.configure("ackReceiptWaitsForPersistence=" + waits);
            try {
                broker.start();
                try (PulsarClient client = broker.client()) {
                    for (String rate : RATES) {
                        String namespace = "public/rate-" + rate.replace('.', '-');
                        limit(broker, namespace, rate);
                        double[] r = measure(client, "persistent://" + namespace + "/cost");
                        System.out.printf("[receipt cost %s, ours, ackReceiptWaitsForPersistence=%s, mark-delete"
                                + " limit %s/s] %d messages: receipt latency p50 %.1f ms, p99 %.1f ms; acked at %.0f"
                                + " msg/s, receipted at %.0f msg/s%n", LINE, waits, rate, MESSAGES, r[0], r[1], r[2],
                                r[3]);
                    }
                }
            } finally {
                broker.kill9();
            }
        }
    }

    private static void limit(Standalone broker, String namespace, String rate) throws Exception {
        HttpResponse<String> created = broker.send("PUT", "/admin/v2/namespaces/" + namespace, null);
        assertEquals(created.statusCode() / 100, 2, created.body());
        HttpResponse<String> limited = broker.send("POST", "/admin/v2/namespaces/" + namespace + "/persistence",
                "{\"bookkeeperEnsemble\":1,\"bookkeeperWriteQuorum\":1,\"bookkeeperAckQuorum\":1,"
                        + "\"managedLedgerMaxMarkDeleteRate\":" + rate + "}");
        assertEquals(limited.statusCode() / 100, 2, limited.body());
    }

    /**
     * {p50 ms, p99 ms, msg/s from the first receive to the last ack call, msg/s from the first receive to the last
     * receipt}.
     */
    private static double[] measure(PulsarClient client, String topic) throws Exception {
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("cost")
                .subscriptionType(SubscriptionType.Shared)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).isAckReceiptEnabled(true)
                .receiverQueueSize(1000).subscribe();
             // One message per entry: an ack of part of a batch is answered at once by the client, unsent.
             Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                     .create()) {
            for (int i = 0; i < MESSAGES; i++) {
                producer.sendAsync("c-" + i);
            }
            producer.flush();
            List<Long> latencies = Collections.synchronizedList(new ArrayList<>(MESSAGES));
            List<CompletableFuture<Void>> receipts = new ArrayList<>(MESSAGES);
            long start = 0;
            for (int i = 0; i < MESSAGES; i++) {
                Message<String> m = consumer.receive(30, TimeUnit.SECONDS);
                assertNotNull(m, "message " + i + " not received");
                long acked = System.nanoTime();
                start = i == 0 ? acked : start;
                receipts.add(consumer.acknowledgeAsync(m).thenRun(() -> latencies.add(System.nanoTime() - acked)));
            }
            long lastAck = System.nanoTime();
            CompletableFuture.allOf(receipts.toArray(new CompletableFuture<?>[0])).get(120, TimeUnit.SECONDS);
            long end = System.nanoTime();
            List<Long> sorted = new ArrayList<>(latencies);
            Collections.sort(sorted);
            return new double[] {sorted.get(sorted.size() / 2) / 1e6, sorted.get(sorted.size() * 99 / 100) / 1e6,
                    MESSAGES / ((lastAck - start) / 1e9), MESSAGES / ((end - start) / 1e9)};
        }
    }
}
