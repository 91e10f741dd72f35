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
package org.apache.pulsar.broker.service.persistent;

import static org.mockito.Mockito.RETURNS_DEEP_STUBS;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.service.BacklogQuotaManager;
import org.apache.pulsar.common.policies.data.BacklogQuota;
import org.apache.pulsar.common.policies.data.impl.BacklogQuotaImpl;
import org.testng.annotations.Test;

/**
 * A topic over its size-based backlog quota with consumer_backlog_eviction: the broker's quota checker
 * trims the slowest subscription with the synchronous skipEntries (and, for the time-based quota, a loop
 * of synchronous markDelete), on its one thread, for every topic in turn. Under the mark-delete rate
 * limiter the trim must neither hold that thread for a limiter period (with durable completion, a throttled
 * synchronous call waits for the next write, and throws after 30 s) nor be lost in a crash (upstream
 * reports the throttled skip complete with nothing written).
 */
public class BacklogQuotaTrimBenchTest extends SubscriptionBenchBase {
    // Well within the limiter's period (1,000 s) and the synchronous API's timeout (30 s).
    private static final long TRIM_BOUND_SECONDS = 10;

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aTrimUnderTheLimiterIsPromptAndDurable() throws Exception {
        openThrottledSubscription();
        PersistentTopic topic = topicOverItsQuota();
        BacklogQuotaManager quotaManager = new BacklogQuotaManager(pulsar());

        ExecutorService quotaChecker = Executors.newSingleThreadExecutor();
        try {
            long start = System.nanoTime();
            Future<?> trim = quotaChecker.submit(() -> quotaManager.handleExceededBacklogQuota(topic,
                    BacklogQuota.BacklogQuotaType.destination_storage, false));
            trim.get(TRIM_BOUND_SECONDS, TimeUnit.SECONDS);
            System.out.printf("backlog-quota trim under the limiter: %d ms%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
        } finally {
            quotaChecker.shutdownNow();
        }
        assertTrue(cursor.getMarkDeletedPosition().compareTo(p.get(1)) > 0, "the trim moved the subscription");
        // Compared as backlogs: the recovered ledger starts a new ledger, where an equal position reads differently.
        assertEquals(crashAndRecover().getNumberOfEntriesInBacklog(false), cursor.getNumberOfEntriesInBacklog(false),
                "the trim survives a crash");
    }

    // A topic whose backlog (the ten entries less p0, p1) is over a one-byte quota, evicted from the consumer.
    private PersistentTopic topicOverItsQuota() {
        PersistentTopic topic = mock(PersistentTopic.class, RETURNS_DEEP_STUBS);
        when(topic.getName()).thenReturn("persistent://public/default/acks");
        when(topic.getManagedLedger()).thenReturn(ledger);
        when(topic.getBacklogQuota(BacklogQuota.BacklogQuotaType.destination_storage)).thenReturn(
                BacklogQuotaImpl.builder().limitSize(1)
                        .retentionPolicy(BacklogQuota.RetentionPolicy.consumer_backlog_eviction).build());
        return topic;
    }

    private static PulsarService pulsar() {
        PulsarService pulsar = mock(PulsarService.class, RETURNS_DEEP_STUBS);
        when(pulsar.getConfiguration()).thenReturn(new ServiceConfiguration());
        return pulsar;
    }
}
