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
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.Set;
import org.apache.bookkeeper.client.PulsarMockBookKeeper;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerFactoryImpl;
import org.apache.pulsar.broker.auth.MockedPulsarServiceBaseTest;
import org.apache.pulsar.client.admin.LongRunningProcessStatus;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.common.naming.TopicName;
import org.apache.pulsar.common.policies.data.ClusterData;
import org.apache.pulsar.common.policies.data.TenantInfoImpl;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * Two compactions inside one mark-delete limiter period (#26484). The compactor's ack carries the new
 * compacted ledger in the {@code CompactedTopicLedger} property; PulsarCompactorSubscription deletes the
 * previous compacted ledger when the ack completes. Upstream completed the throttled ack at once: a crash
 * then recovered a compaction cursor naming the deleted ledger, and the compacted view was gone.
 *
 * <p>The crash: once the previous compacted ledger is deleted, a second managed-ledger factory opens the
 * topic over the broker's own (mock) BookKeeper and metadata store, the first broker never closed, as a
 * broker taking over after a crash does; it recovers the compaction cursor from what was durable.
 */
public class CompactionCrashBenchTest extends MockedPulsarServiceBaseTest {
    private static final String COMPACTED_LEDGER = "CompactedTopicLedger";
    private static final Duration WAIT = Duration.ofSeconds(60);

    @BeforeMethod(alwaysRun = true)
    @Override
    protected void setup() throws Exception {
        // One mark-delete write per 5 s per cursor (standalone.conf has 0.1/s): both compactions fall in one
        // period.
        conf.setManagedLedgerDefaultMarkDeleteRateLimit(0.2);
        internalSetup();
        admin.clusters().createCluster("test",
                ClusterData.builder().serviceUrl(pulsar.getWebServiceAddress()).build());
        admin.tenants().createTenant("fork", new TenantInfoImpl(Set.of(), Set.of("test")));
        admin.namespaces().createNamespace("fork/ns", Set.of("test"));
    }

    @AfterMethod(alwaysRun = true)
    @Override
    protected void cleanup() throws Exception {
        internalCleanup();
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 180_000)
    public void aCrashAfterTwoCompactionsInOneLimiterPeriodKeepsTheCompactedView() throws Exception {
        String topic = "persistent://fork/ns/compacted";
        publish(topic, "v1");
        long first = compact(topic, -1);
        publish(topic, "v2");
        long second = compact(topic, first);
        PulsarMockBookKeeper bookKeeper = pulsarTestContext.getMockBookKeeper();
        await().atMost(WAIT).until(() -> !bookKeeper.getLedgers().contains(first));

        ManagedLedgerFactoryImpl afterCrash = new ManagedLedgerFactoryImpl(
                pulsarTestContext.getLocalMetadataStore(), bookKeeper);
        try {
            ManagedLedger ledger = afterCrash.open(TopicName.get(topic).getPersistenceNamingEncoding(),
                    new ManagedLedgerConfig());
            ManagedCursor compaction = ledger.openCursor("__compaction");
            Long named = compaction.getProperties().get(COMPACTED_LEDGER);
            assertTrue(named != null && bookKeeper.getLedgers().contains(named),
                    "the recovered compaction cursor names compacted ledger " + named + ", which was deleted "
                            + "(compacted ledgers: first " + first + ", second " + second + ")");
            assertEquals(named.longValue(), second);
        } finally {
            afterCrash.shutdown();
        }
    }

    private void publish(String topic, String value) throws Exception {
        try (Producer<String> producer = pulsarClient.newProducer(Schema.STRING).topic(topic)
                .enableBatching(false).create()) {
            for (int i = 0; i < 10; i++) {
                producer.newMessage().key("k" + (i % 3)).value(value + "-" + i).send();
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
