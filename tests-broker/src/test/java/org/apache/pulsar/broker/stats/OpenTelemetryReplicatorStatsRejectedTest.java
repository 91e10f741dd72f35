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
package org.apache.pulsar.broker.stats;

import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import io.opentelemetry.api.common.Attributes;
import java.util.List;
import java.util.Map;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.pulsar.broker.service.persistent.PersistentReplicator;
import org.apache.pulsar.broker.service.persistent.ReplicationRejections;
import org.testng.annotations.Test;

/**
 * The broker's count of rejected source messages (#26113) comes from its replicator stats: one series per state,
 * summed over the replicators of all its topics, and gone once the stats are closed.
 */
public class OpenTelemetryReplicatorStatsRejectedTest extends ReplicatorStatsTestBase {
    private static final Attributes RECORDED =
            Attributes.of(OpenTelemetryReplicatorStats.REJECTED_STATE_KEY, "recorded");
    private static final Attributes HELD = Attributes.of(OpenTelemetryReplicatorStats.REJECTED_STATE_KEY, "held");

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void theCountIsSummedOverTheBrokersReplicatorsAndClosedWithTheStats() {
        // t1: 12:3 held (answered as a duplicate), 12:4 recorded; t2: 20:7 recorded; t3: a non-persistent one.
        ReplicationRejections firstRecords = rejections(Map.of(
                ReplicationRejections.PROPERTY_PREFIX + "12:3", ReplicationRejections.HELD + "duplicate",
                ReplicationRejections.PROPERTY_PREFIX + "12:4", "message too large"));
        PersistentReplicator first = persistentReplicator("persistent://t/ns/t1");
        when(first.getRejections()).thenReturn(firstRecords);
        ReplicationRejections secondRecords = rejections(Map.of(ReplicationRejections.PROPERTY_PREFIX + "20:7",
                "checksum"));
        PersistentReplicator second = persistentReplicator("persistent://t/ns/t2");
        when(second.getRejections()).thenReturn(secondRecords);
        OpenTelemetryReplicatorStats stats = new OpenTelemetryReplicatorStats(broker(meters.get("broker"), Map.of(
                "persistent://t/ns/t1", List.of(first),
                "persistent://t/ns/t2", List.of(second),
                "non-persistent://t/ns/t3", List.of(nonPersistentReplicator("non-persistent://t/ns/t3")))));

        assertEquals(points(OpenTelemetryReplicatorStats.REJECTED_COUNTER), Map.of(RECORDED, 2L, HELD, 1L),
                "two series for the broker, no topic attribute");

        stats.close();
        assertTrue(points(OpenTelemetryReplicatorStats.REJECTED_COUNTER).isEmpty(), "closed with the stats");
    }

    private ReplicationRejections rejections(Map<String, String> properties) {
        ManagedCursor cursor = mock(ManagedCursor.class);
        when(cursor.getCursorProperties()).thenReturn(properties);
        when(cursor.getMarkDeletedPosition()).thenReturn(PositionFactory.create(1, 1));
        return new ReplicationRejections("r1-->r2", cursor, executor);
    }
}
