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
package org.pulsarfork.broker;

import static org.awaitility.Awaitility.await;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.client.PulsarMockBookKeeper;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerFactoryImpl;
import org.apache.pulsar.client.admin.LongRunningProcessStatus;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.common.naming.TopicName;
import org.apache.pulsar.common.policies.data.PersistencePolicies;
import org.apache.pulsar.metadata.api.extended.MetadataStoreExtended;

/**
 * The compaction crash scenario of #26484, shared by the in-process broker tests of every line (4.x on
 * upstream's MockedPulsarServiceBaseTest, 5.0.0-M1 on a broker built here): two compactions inside one
 * mark-delete limiter period, then a crash, then the compacted view must still be there.
 */
final class CompactionCrashSteps {
    static final int KEYS = 3;
    private static final String COMPACTED_LEDGER = "CompactedTopicLedger";
    private static final Duration WAIT = Duration.ofSeconds(60);
    // The broker client's default operation timeout, which bounds the compactor's ack receipt.
    private static final Duration COMPACTOR_ACK_TIMEOUT = Duration.ofSeconds(30);
    // A limiter period (100 s) longer than the compactor's ack timeout.
    private static final double SLOW_LIMITER_RATE = 0.01;

    private final PulsarAdmin admin;
    private final PulsarClient client;
    private final PulsarMockBookKeeper bookKeeper;

    CompactionCrashSteps(PulsarAdmin admin, PulsarClient client, PulsarMockBookKeeper bookKeeper) {
        this.admin = admin;
        this.client = client;
        this.bookKeeper = bookKeeper;
    }

    /** Gives the namespace's new topics a mark-delete limiter slower than the compactor's ack timeout. */
    void useSlowLimiter(String namespace) throws Exception {
        admin.namespaces().setPersistence(namespace, new PersistencePolicies(1, 1, 1, SLOW_LIMITER_RATE));
    }

    /**
     * Compacts twice inside one limiter period and waits until the first compacted ledger is deleted. Then
     * the crash: a second managed-ledger factory opens the topic over the broker's own metadata store and
     * BookKeeper, the broker never closed (its graceful cursor flush never ran), as a broker taking over
     * after a crash does, and recovers the compaction cursor from what was durable.
     */
    void twoCompactionsThenCrash(String topic, MetadataStoreExtended store) throws Exception {
        publish(topic, "v1");
        long first = compact(topic, -1);
        publish(topic, "v2");
        long start = System.nanoTime();
        long second = compact(topic, first);
        long compacted = System.nanoTime();
        await().atMost(WAIT).until(() -> !bookKeeper.getLedgers().contains(first));
        long compactionMillis = TimeUnit.NANOSECONDS.toMillis(compacted - start);
        System.out.printf("[%s jars] %s: second compaction %d ms, previous compacted ledger deleted %d ms later%n",
                System.getProperty("bench.target"), topic, compactionMillis,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - compacted));
        // On 5.0.0-M1 the compactor waits for its ack's receipt, which its client fails after this long.
        assertTrue(compactionMillis < COMPACTOR_ACK_TIMEOUT.toMillis(), "the second compaction took "
                + compactionMillis + " ms: its ack waited longer than the compactor's ack timeout");

        ManagedLedgerFactoryImpl afterCrash = new ManagedLedgerFactoryImpl(store, bookKeeper);
        try {
            ManagedLedger ledger = afterCrash.open(TopicName.get(topic).getPersistenceNamingEncoding(),
                    new ManagedLedgerConfig());
            Long named = ledger.openCursor("__compaction").getProperties().get(COMPACTED_LEDGER);
            assertTrue(named != null && bookKeeper.getLedgers().contains(named),
                    "the recovered compaction cursor names compacted ledger " + named + ", which was deleted "
                            + "(compacted ledgers: first " + first + ", second " + second + ")");
            assertEquals(named.longValue(), second);
            assertEquals(compactedEntries(named), KEYS, "the compacted view holds the latest value of every key");
        } finally {
            afterCrash.shutdown();
        }
    }

    private long compactedEntries(long ledgerId) throws Exception {
        try (LedgerHandle compacted = bookKeeper.openLedgerNoRecovery(ledgerId, BookKeeper.DigestType.CRC32,
                new byte[0])) {
            return compacted.getLastAddConfirmed() + 1;
        }
    }

    private void publish(String topic, String value) throws Exception {
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic)
                .enableBatching(false).create()) {
            for (int i = 0; i < 10; i++) {
                producer.newMessage().key("k" + (i % KEYS)).value(value + "-" + i).send();
            }
        }
    }

    /** Triggers a compaction and waits for it; returns the compacted ledger it made. */
    private long compact(String topic, long previous) throws Exception {
        admin.topics().triggerCompaction(topic);
        await().atMost(WAIT).until(() -> {
            LongRunningProcessStatus status = admin.topics().compactionStatus(topic);
            if (status.status == LongRunningProcessStatus.Status.ERROR) {
                throw new IllegalStateException("compaction failed: " + status.lastError);
            }
            return status.status == LongRunningProcessStatus.Status.SUCCESS
                    && admin.topics().getInternalStats(topic).compactedLedger.ledgerId != previous;
        });
        return admin.topics().getInternalStats(topic).compactedLedger.ledgerId;
    }
}
