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

import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import org.apache.pulsar.broker.service.MockBookKeeperBroker;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * 5.0.0-M1 twin of the 4.x in-process CompactionCrashBenchTest (#26484). The broker is a
 * {@link MockBookKeeperBroker}, so that "what was durable" can be inspected and recovered.
 *
 * <p>The scenario and the crash are {@link CompactionCrashSteps}. The compactor's ack names the new
 * compacted ledger in {@code CompactedTopicLedger}; PulsarCompactorSubscription deletes the previous
 * compacted ledger when that ack completes. Upstream completed the throttled ack at once.
 */
public class CompactionCrashOnPulsarServiceBenchTest {
    private MockBookKeeperBroker broker;

    @BeforeMethod(alwaysRun = true)
    public void startBroker() throws Exception {
        // One mark-delete write per 5 s per cursor (standalone.conf has 0.1/s): both compactions fall in one
        // period.
        broker = MockBookKeeperBroker.start(conf -> conf.setManagedLedgerDefaultMarkDeleteRateLimit(0.2));
    }

    @AfterMethod(alwaysRun = true)
    public void stopBroker() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 180_000)
    public void aCrashAfterTwoCompactionsInOneLimiterPeriodKeepsTheCompactedView() throws Exception {
        new CompactionCrashSteps(broker.admin, broker.client, broker.bookKeeper)
                .twoCompactionsThenCrash("persistent://prop/ns/compacted", broker.pulsar.getLocalMetadataStore());
    }

    /**
     * A limiter period (100 s) longer than the compactor's ack timeout. On 5.0 the compactor waits for its
     * ack's receipt, which its client fails after 30 to 60 s (checked every 30 s); an ack held for a period
     * would stall the compaction until the factory's 60 s flush, or fail it, and the compactor then deletes
     * the ledger the late write names. Our managed-ledger writes the compaction cursor's ack at once.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 180_000)
    public void compactionsUnderALimiterSlowerThanTheCompactorsTimeoutSurviveACrash() throws Exception {
        CompactionCrashSteps steps = new CompactionCrashSteps(broker.admin, broker.client, broker.bookKeeper);
        steps.useSlowLimiter("prop/ns");
        steps.twoCompactionsThenCrash("persistent://prop/ns/slow-limiter", broker.pulsar.getLocalMetadataStore());
    }
}
