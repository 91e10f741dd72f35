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

import static org.mockito.Mockito.when;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.pulsar.broker.service.persistent.PersistentReplicator;
import org.apache.pulsar.broker.service.persistent.ReplicationRetryBackoff;
import org.testng.annotations.Test;

/**
 * The held gauges of the resend backoff come from the broker's replicator stats, with the held replicator's
 * attributes only, and are gone once the stats are closed.
 */
public class OpenTelemetryReplicatorStatsHeldTest extends ReplicatorStatsTestBase {
    private static final String HELD_TOPIC = "persistent://t/ns/held";

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void onlyTheHeldReplicatorHasAPointAndTheStatsCloseTheGauges() {
        PersistentReplicator held = persistentReplicator(HELD_TOPIC);
        ReplicationRetryBackoff backoff = backoff();
        backoff.onRefusal(PositionFactory.create(12, 4), "message too large", () -> { });
        when(held.getRetryBackoff()).thenReturn(backoff);
        PersistentReplicator flowing = persistentReplicator("persistent://t/ns/flowing");
        when(flowing.getRetryBackoff()).thenReturn(backoff());
        OpenTelemetryReplicatorStats stats = new OpenTelemetryReplicatorStats(broker(meters.get("broker"), Map.of(
                HELD_TOPIC, List.of(held), "persistent://t/ns/flowing", List.of(flowing))));

        assertEquals(points(OpenTelemetryReplicatorStats.HELD_ATTEMPTS_GAUGE),
                Map.of(replicatorAttributes(HELD_TOPIC), 1L));
        assertEquals(points(OpenTelemetryReplicatorStats.HELD_DURATION_GAUGE).keySet(),
                Set.of(replicatorAttributes(HELD_TOPIC)));

        stats.close();
        assertTrue(points(OpenTelemetryReplicatorStats.HELD_ATTEMPTS_GAUGE).isEmpty(), "closed with the stats");
        assertTrue(points(OpenTelemetryReplicatorStats.HELD_DURATION_GAUGE).isEmpty(), "closed with the stats");
    }

    private ReplicationRetryBackoff backoff() {
        return new ReplicationRetryBackoff("r1-->r2", "r2", executor, () -> true, position -> false);
    }
}
