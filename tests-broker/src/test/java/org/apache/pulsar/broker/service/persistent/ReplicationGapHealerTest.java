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

import static org.awaitility.Awaitility.await;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.Mockito.doAnswer;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.bookkeeper.mledger.AsyncCallbacks.DeleteCallback;
import org.apache.bookkeeper.mledger.AsyncCallbacks.ReadEntryCallback;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.bookkeeper.mledger.impl.EntryImpl;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.impl.MessageImpl;
import org.apache.pulsar.client.impl.ProducerBuilderImpl;
import org.apache.pulsar.client.impl.ProducerImpl;
import org.apache.pulsar.client.impl.SendCallback;
import org.apache.pulsar.client.impl.conf.ProducerConfigurationData;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * The gap healer on its own, on every line (5.0.0-M1 has no broker test-jar for the two-cluster test): a
 * replicator cursor whose properties live in a map, a healing producer whose receipt the test gives.
 */
public class ReplicationGapHealerTest {
    private static final Position E3 = PositionFactory.create(12, 3);
    private static final String KEY = "pulsar.replication.gap.12:3";
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final AttributeKey<String> GAP_STATE = AttributeKey.stringKey("pulsar.replication.gap.state");

    private final Map<String, String> properties = new ConcurrentHashMap<>();
    private ScheduledExecutorService executor;
    private ManagedCursor cursor;
    private ProducerBuilderImpl<byte[]> builder;
    private ProducerImpl<byte[]> producer;
    private final AtomicReference<SendCallback> pendingSend = new AtomicReference<>();

    @BeforeMethod(alwaysRun = true)
    @SuppressWarnings("unchecked")
    public void setUp() {
        executor = Executors.newSingleThreadScheduledExecutor();
        properties.clear();
        cursor = mock(ManagedCursor.class);
        when(cursor.getName()).thenReturn("pulsar.repl.r2");
        when(cursor.getCursorProperties()).thenAnswer(inv -> Map.copyOf(properties));
        when(cursor.putCursorProperty(anyString(), anyString())).thenAnswer(inv -> {
            properties.put(inv.getArgument(0), inv.getArgument(1));
            return CompletableFuture.completedFuture(null);
        });
        when(cursor.removeCursorProperty(anyString())).thenAnswer(inv -> {
            properties.remove(inv.getArgument(0));
            return CompletableFuture.completedFuture(null);
        });
        doAnswer(inv -> {
            inv.<DeleteCallback>getArgument(1).deleteComplete(null);
            return null;
        }).when(cursor).asyncDelete(any(Position.class), any(DeleteCallback.class), any());
        ManagedLedger ledger = mock(ManagedLedger.class);
        when(cursor.getManagedLedger()).thenReturn(ledger);
        doAnswer(inv -> {
            inv.<ReadEntryCallback>getArgument(1).readEntryComplete(EntryImpl.create(12, 3, new byte[] {1}), null);
            return null;
        }).when(ledger).asyncReadEntry(any(Position.class), any(ReadEntryCallback.class), any());

        producer = mock(ProducerImpl.class);
        when(producer.closeAsync()).thenReturn(CompletableFuture.completedFuture(null));
        doAnswer(inv -> {
            pendingSend.set(inv.getArgument(1));
            return null;
        }).when(producer).sendAsync(any(), any(SendCallback.class));
        builder = mock(ProducerBuilderImpl.class);
        when(builder.clone()).thenReturn(builder);
        when(builder.producerName(anyString())).thenReturn(builder);
        when(builder.getConf()).thenReturn(new ProducerConfigurationData());
        when(builder.createAsync()).thenReturn(CompletableFuture.completedFuture((Producer<byte[]>) producer));
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() {
        executor.shutdownNow();
    }

    private ReplicationGapHealer newHealer() {
        return newHealer(OpenTelemetry.noop().getMeter("test"));
    }

    private ReplicationGapHealer newHealer(Meter meter) {
        return new ReplicationGapHealer("test", cursor, builder, "pulsar.repl.r1-->r2",
                (position, data) -> CompletableFuture.completedFuture(mock(MessageImpl.class)), executor,
                () -> false, meter, Attributes.empty());
    }

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aGapIsWrittenDownFirstAndDeletedOnlyAfterTheHealingReceipt() throws Exception {
        ReplicationGapHealer healer = newHealer();
        healer.takeOver(E3);

        await().atMost(WAIT).until(() -> pendingSend.get() != null);
        assertEquals(properties.get(KEY), "healing", "written down before the publish");
        verify(builder).producerName("pulsar.repl.r1-->r2.heal.12:3");
        verify(cursor, never()).asyncDelete(any(Position.class), any(DeleteCallback.class), any());
        assertTrue(healer.isGap(E3), "the replicator's own producer must leave it alone");

        pendingSend.get().sendComplete(null, null);
        await().atMost(WAIT).until(() -> healer.getHealedCount() == 1);
        verify(cursor).asyncDelete(any(Position.class), any(DeleteCallback.class), any());
        assertFalse(properties.containsKey(KEY));
        assertFalse(healer.isGap(E3));
    }

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aRefusedHealHoldsTheGapAndARestartDoesNotForgetIt() throws Exception {
        when(builder.createAsync()).thenReturn(CompletableFuture.failedFuture(
                new PulsarClientException.NotAllowedException("refused")));
        ReplicationGapHealer healer = newHealer();
        healer.takeOver(E3);

        await().atMost(WAIT).until(() -> healer.getHeldCount() == 1);
        assertTrue(properties.get(KEY).startsWith("held: "), properties.toString());
        healer.takeOver(E3);
        assertEquals(healer.getHeldCount(), 1, "held once, however often it is read again");

        ReplicationGapHealer restarted = newHealer();
        assertTrue(restarted.isGap(E3), "the cursor property brings the gap back");
        restarted.takeOver(E3);
        await().atMost(WAIT).until(() -> restarted.getHeldCount() == 1);
        assertTrue(properties.get(KEY).startsWith("held: "));
        verify(cursor, never()).asyncDelete(any(Position.class), any(DeleteCallback.class), any());
    }

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aConnectionProblemIsRetriedNotHeld() throws Exception {
        when(builder.createAsync())
                .thenReturn(CompletableFuture.failedFuture(new PulsarClientException.ConnectException("down")))
                .thenReturn(CompletableFuture.completedFuture((Producer<byte[]>) producer));
        ReplicationGapHealer healer = newHealer();
        healer.takeOver(E3);

        await().atMost(WAIT).until(() -> pendingSend.get() != null);
        pendingSend.get().sendComplete(null, null);
        await().atMost(WAIT).until(() -> healer.getHealedCount() == 1);
        assertEquals(healer.getHeldCount(), 0);
    }

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void theGapCounterReportsHeldAndHealedGaps() throws Exception {
        InMemoryMetricReader reader = InMemoryMetricReader.create();
        try (SdkMeterProvider meters = SdkMeterProvider.builder().registerMetricReader(reader).build()) {
            when(builder.createAsync()).thenReturn(CompletableFuture.failedFuture(
                    new PulsarClientException.NotAllowedException("refused")));
            ReplicationGapHealer healer = newHealer(meters.get("test"));
            healer.takeOver(E3);
            await().atMost(WAIT).until(() -> healer.getHeldCount() == 1);
            assertEquals(gapCount(reader, "held"), 1);
            assertEquals(gapCount(reader, "healed"), 0);
        }
    }

    private static long gapCount(InMemoryMetricReader reader, String state) {
        return reader.collectAllMetrics().stream()
                .filter(metric -> metric.getName().equals(ReplicationGapHealer.GAP_COUNTER))
                .flatMap(metric -> metric.getLongSumData().getPoints().stream())
                .filter(point -> state.equals(point.getAttributes().get(GAP_STATE)))
                .mapToLong(LongPointData::getValue)
                .sum();
    }

    @Test(groups = FORK_ONLY)
    public void onlyTheUnconfirmedReportIsAGap() {
        assertFalse(ReplicationGapHealer.isUnconfirmed(new PulsarClientException.NotAllowedException("size")));
        assertTrue(ReplicationGapHealer.isUnconfirmed(new RuntimeException(
                new org.apache.pulsar.client.impl.GeoReplicationUnconfirmedException("t", "p", 12, 3))));
    }
}
