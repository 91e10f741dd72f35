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

import static org.mockito.Mockito.RETURNS_DEEP_STUBS;
import static org.mockito.Mockito.doReturn;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.data.MetricDataType;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.service.BrokerService;
import org.apache.pulsar.broker.service.Replicator;
import org.apache.pulsar.broker.service.Topic;
import org.apache.pulsar.broker.service.nonpersistent.NonPersistentReplicator;
import org.apache.pulsar.broker.service.persistent.PersistentReplicator;
import org.apache.pulsar.common.policies.data.stats.ReplicatorStatsImpl;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;

/**
 * A broker for {@link OpenTelemetryReplicatorStats} alone: its topics and their replicators, mocked but for what a
 * test gives them, the meter the stats register with and its reader, and an executor for the replicators' parts.
 */
public abstract class ReplicatorStatsTestBase {
    protected ScheduledExecutorService executor;
    protected InMemoryMetricReader reader;
    protected SdkMeterProvider meters;

    @BeforeMethod(alwaysRun = true)
    public void setUpMeters() {
        executor = Executors.newSingleThreadScheduledExecutor();
        reader = InMemoryMetricReader.create();
        meters = SdkMeterProvider.builder().registerMetricReader(reader).build();
    }

    @AfterMethod(alwaysRun = true)
    public void closeMeters() {
        meters.close();
        executor.shutdownNow();
    }

    protected static Attributes replicatorAttributes(String topic) {
        return Attributes.of(AttributeKey.stringKey("pulsar.topic"), topic,
                AttributeKey.stringKey("pulsar.replication.remote.cluster.name"), "r2");
    }

    /** A geo replicator of {@code topic}; what else it returns is a mock's default (deep stubs: never null). */
    protected static PersistentReplicator persistentReplicator(String topic) {
        PersistentReplicator replicator = mock(PersistentReplicator.class, RETURNS_DEEP_STUBS);
        when(replicator.getAttributes()).thenReturn(replicatorAttributes(topic));
        when(replicator.getStats()).thenReturn(new ReplicatorStatsImpl());
        return replicator;
    }

    protected static NonPersistentReplicator nonPersistentReplicator(String topic) {
        NonPersistentReplicator replicator = mock(NonPersistentReplicator.class, RETURNS_DEEP_STUBS);
        when(replicator.getAttributes()).thenReturn(replicatorAttributes(topic));
        return replicator;
    }

    /** A broker whose topics (by name) have these replicators, and whose OpenTelemetry meter is {@code meter}. */
    protected static PulsarService broker(Meter meter, Map<String, List<Replicator>> topics) {
        Map<String, CompletableFuture<Optional<Topic>>> loaded = new HashMap<>();
        topics.forEach((name, replicators) -> {
            Map<String, Replicator> byCluster = new HashMap<>();
            replicators.forEach(r -> byCluster.put("r" + (byCluster.size() + 2), r));
            Topic topic = mock(Topic.class);
            doReturn(byCluster).when(topic).getReplicators();
            loaded.put(name, CompletableFuture.completedFuture(Optional.of(topic)));
        });
        BrokerService brokerService = mock(BrokerService.class);
        doReturn(loaded).when(brokerService).getTopics();
        PulsarBrokerOpenTelemetry openTelemetry = mock(PulsarBrokerOpenTelemetry.class);
        when(openTelemetry.getMeter()).thenReturn(meter);
        PulsarService pulsar = mock(PulsarService.class);
        when(pulsar.getOpenTelemetry()).thenReturn(openTelemetry);
        when(pulsar.getBrokerService()).thenReturn(brokerService);
        return pulsar;
    }

    /** The points of metric {@code name} collected now: attributes to value. */
    protected Map<Attributes, Long> points(String name) {
        Map<Attributes, Long> points = new HashMap<>();
        for (MetricData metric : reader.collectAllMetrics()) {
            if (!metric.getName().equals(name)) {
                continue;
            }
            // An up-down counter is a (non-monotonic) sum; a gauge of longs, a long gauge.
            (metric.getType() == MetricDataType.LONG_SUM ? metric.getLongSumData().getPoints()
                    : metric.getLongGaugeData().getPoints())
                    .forEach(p -> points.put(p.getAttributes(), p.getValue()));
        }
        return points;
    }
}
