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
package org.apache.bookkeeper.mledger.impl;

import static org.apache.pulsar.opentelemetry.OpenTelemetryAttributes.ML_CURSOR_NAME;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerFactoryConfig;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.stats.NullStatsLogger;
import org.testng.annotations.Test;

/**
 * The operator's view of held acks: {@code pulsar.broker.managed_ledger.cursor.accepted_not_durable.count}
 * counts, per cursor, the acks the rate limiter accepted that no durable write holds yet.
 */
public class AcceptedNotDurableMetricTest extends CursorBenchBase {
    private static final String METRIC = "pulsar.broker.managed_ledger.cursor.accepted_not_durable.count";

    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void theMetricCountsHeldAcksUntilTheirWriteIsDurable() throws Exception {
        InMemoryMetricReader reader = InMemoryMetricReader.create();
        OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
                .setMeterProvider(SdkMeterProvider.builder().registerMetricReader(reader).build())
                .build();
        ManagedLedgerFactoryImpl metered = new ManagedLedgerFactoryImpl(metadataStore,
                policy -> CompletableFuture.completedFuture(bkc), new ManagedLedgerFactoryConfig(),
                NullStatsLogger.INSTANCE, otel);
        crashFactories.add(metered);
        try {
            ManagedLedger ledger = metered.open("public/default/persistent/metric",
                    new ManagedLedgerConfig().setThrottleMarkDelete(0.001));
            ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
            List<Position> p = openWithEntries(ledger, cursor, 10);
            markDeleteTakingThePermit(cursor, p.get(1), Map.of());
            CallbackProbe probe = new CallbackProbe(cursor);
            CallbackProbe.Outcome first = probe.newOutcome("delete(p3)");
            CallbackProbe.Outcome second = probe.newOutcome("markDelete(p5)");
            cursor.asyncDelete(p.get(3), probe.delete(first), null);
            cursor.asyncMarkDelete(p.get(5), probe.markDelete(second), null);

            assertEquals(heldAcks(reader), 2L, "two throttled acks wait for a write");
            cursor.flush();
            second.future.get(10, TimeUnit.SECONDS);
            first.future.get(10, TimeUnit.SECONDS);
            assertEquals(heldAcks(reader), 0L, "the flush's write holds both");
            assertEquals(probe.violations, List.of());
        } finally {
            otel.close();
        }
    }

    private static long heldAcks(InMemoryMetricReader reader) {
        return reader.collectAllMetrics().stream()
                .filter(metric -> metric.getName().equals(METRIC))
                .flatMap(metric -> metric.getLongSumData().getPoints().stream())
                .filter(point -> "c1".equals(point.getAttributes().get(ML_CURSOR_NAME)))
                .mapToLong(LongPointData::getValue)
                .sum();
    }
}
