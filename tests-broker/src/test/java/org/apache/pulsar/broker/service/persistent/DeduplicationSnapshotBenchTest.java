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

import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;
import static org.testng.Assert.assertEquals;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.service.Topic.PublishContext;
import org.testng.annotations.Test;

/**
 * Deduplication snapshots under the mark-delete rate limiter (#26484). Each snapshot is a mark-delete of
 * the {@code pulsar.dedup} cursor carrying the producers' sequence ids; MessageDeduplication takes one at a
 * time and skips, with a WARN, any snapshot due while one is still being taken. Upstream completed a
 * throttled snapshot at once. With our managed-ledger jar a throttled snapshot is held until written (one
 * limiter period), so the broker must count it as taken once accepted, or it skips every snapshot due in
 * that period. A control: it passes on both jar sets, and fails with our managed-ledger jar alone.
 */
public class DeduplicationSnapshotBenchTest extends SubscriptionBenchBase {
    private static final String PRODUCER = "producer-1";

    @Test(timeOut = 60_000)
    public void aSnapshotDueWhileTheLastOneIsThrottledIsStillTaken() throws Exception {
        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
        try {
            ManagedLedger dedupLedger = factory.open("public/default/persistent/dedup",
                    new ManagedLedgerConfig().setThrottleMarkDelete(NO_PERMIT_RATE));
            MessageDeduplication deduplication = enabledDeduplication(dedupLedger, scheduler);

            // A first snapshot, written at once: it takes the limiter's permit. Every later one is throttled.
            ManagedCursor dedupCursor = deduplication.getManagedCursor();
            markDeleteTakingThePermit(dedupCursor, dedupLedger.addEntry("message-0".getBytes()),
                    Map.of(PRODUCER, 0L));

            // A snapshot per message, each taken on the calling thread.
            for (long sequenceId = 1; sequenceId <= 2; sequenceId++) {
                Position position = dedupLedger.addEntry(("message-" + sequenceId).getBytes());
                deduplication.recordMessagePersisted(publishContext(sequenceId), position);
            }

            assertEquals(dedupCursor.getProperties(), Map.of(PRODUCER, 2L),
                    "the second snapshot, due while the throttled first one waits for its write, was skipped");
        } finally {
            scheduler.shutdownNow();
        }
    }

    private static MessageDeduplication enabledDeduplication(ManagedLedger ledger,
                                                             ScheduledExecutorService scheduler) throws Exception {
        ServiceConfiguration config = new ServiceConfiguration();
        config.setBrokerDeduplicationEntriesInterval(1);
        PulsarService pulsar = mock(PulsarService.class);
        when(pulsar.getConfiguration()).thenReturn(config);
        when(pulsar.getExecutor()).thenReturn(scheduler);
        PersistentTopic topic = mock(PersistentTopic.class);
        when(topic.getName()).thenReturn("persistent://public/default/dedup");
        when(topic.isDeduplicationEnabled()).thenReturn(true);

        MessageDeduplication deduplication = new MessageDeduplication(pulsar, topic, ledger);
        deduplication.checkStatus().get(10, TimeUnit.SECONDS);
        assertEquals(deduplication.getStatus(), MessageDeduplication.Status.Enabled);
        return deduplication;
    }

    private static PublishContext publishContext(long sequenceId) {
        PublishContext context = mock(PublishContext.class);
        when(context.getProducerName()).thenReturn(PRODUCER);
        when(context.getSequenceId()).thenReturn(sequenceId);
        when(context.getHighestSequenceId()).thenReturn(sequenceId);
        return context;
    }
}
