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
import io.netty.channel.EventLoopGroup;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.EnsemblePlacementPolicy;
import org.apache.bookkeeper.client.PulsarMockBookKeeper;
import org.apache.bookkeeper.common.util.OrderedExecutor;
import org.apache.bookkeeper.stats.StatsLogger;
import org.apache.pulsar.broker.BookKeeperClientFactory;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.common.policies.data.ClusterData;
import org.apache.pulsar.common.policies.data.TenantInfoImpl;
import org.apache.pulsar.metadata.api.extended.MetadataStoreExtended;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * 5.0.0-M1 twin of the 4.x in-process CompactionCrashBenchTest (#26484). 5.0.0-M1 publishes no
 * pulsar-broker test-jar, so the broker is built here the way a standalone is, a real {@link PulsarService}
 * on an in-memory metadata store, with upstream's {@link PulsarMockBookKeeper} (testmocks) in place of
 * the standalone's local bookie so that "what was durable" can be inspected and recovered.
 *
 * <p>The scenario and the crash are {@link CompactionCrashSteps}. The compactor's ack names the new
 * compacted ledger in {@code CompactedTopicLedger}; PulsarCompactorSubscription deletes the previous
 * compacted ledger when that ack completes. Upstream completed the throttled ack at once.
 */
public class CompactionCrashOnPulsarServiceBenchTest {
    private OrderedExecutor bookKeeperExecutor;
    private PulsarMockBookKeeper bookKeeper;
    private PulsarService pulsar;
    private PulsarAdmin admin;
    private PulsarClient client;

    @BeforeMethod(alwaysRun = true)
    public void startBroker() throws Exception {
        bookKeeperExecutor = OrderedExecutor.newBuilder().numThreads(1).name("mock-bookkeeper").build();
        bookKeeper = new PulsarMockBookKeeper(bookKeeperExecutor);
        pulsar = new MockBookKeeperPulsarService(brokerConfig(), bookKeeper);
        pulsar.start();
        admin = PulsarAdmin.builder().serviceHttpUrl(pulsar.getWebServiceAddress()).build();
        client = PulsarClient.builder().serviceUrl(pulsar.getBrokerServiceUrl()).build();
        admin.clusters().createCluster("test",
                ClusterData.builder().serviceUrl(pulsar.getWebServiceAddress()).build());
        admin.tenants().createTenant("fork", new TenantInfoImpl(Set.of(), Set.of("test")));
        admin.namespaces().createNamespace("fork/ns", Set.of("test"));
    }

    private static ServiceConfiguration brokerConfig() {
        ServiceConfiguration conf = new ServiceConfiguration();
        String store = "memory:compaction-crash-" + UUID.randomUUID();
        conf.setClusterName("test");
        conf.setMetadataStoreUrl(store);
        conf.setConfigurationMetadataStoreUrl(store);
        conf.setAdvertisedAddress("localhost");
        conf.setBrokerServicePort(Optional.of(0));
        conf.setWebServicePort(Optional.of(0));
        conf.setManagedLedgerDefaultEnsembleSize(1);
        conf.setManagedLedgerDefaultWriteQuorum(1);
        conf.setManagedLedgerDefaultAckQuorum(1);
        conf.setDefaultNumberOfNamespaceBundles(1);
        conf.setBrokerShutdownTimeoutMs(0L);
        // One mark-delete write per 5 s per cursor (standalone.conf has 0.1/s): both compactions fall in one
        // period.
        conf.setManagedLedgerDefaultMarkDeleteRateLimit(0.2);
        return conf;
    }

    @AfterMethod(alwaysRun = true)
    public void stopBroker() throws Exception {
        if (client != null) {
            client.close();
        }
        if (admin != null) {
            admin.close();
        }
        if (pulsar != null) {
            pulsar.close();
        }
        if (bookKeeper != null) {
            bookKeeper.shutdown();
        }
        if (bookKeeperExecutor != null) {
            bookKeeperExecutor.shutdownNow();
        }
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 180_000)
    public void aCrashAfterTwoCompactionsInOneLimiterPeriodKeepsTheCompactedView() throws Exception {
        new CompactionCrashSteps(admin, client, bookKeeper)
                .twoCompactionsThenCrash("persistent://fork/ns/compacted", pulsar.getLocalMetadataStore());
    }

    /**
     * A limiter period (100 s) longer than the compactor's ack timeout. On 5.0 the compactor waits for its
     * ack's receipt, which its client fails after 30 to 60 s (checked every 30 s); an ack held for a period
     * would stall the compaction until the factory's 60 s flush, or fail it, and the compactor then deletes
     * the ledger the late write names. Our managed-ledger writes the compaction cursor's ack at once.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 180_000)
    public void compactionsUnderALimiterSlowerThanTheCompactorsTimeoutSurviveACrash() throws Exception {
        CompactionCrashSteps steps = new CompactionCrashSteps(admin, client, bookKeeper);
        steps.useSlowLimiter("fork/ns");
        steps.twoCompactionsThenCrash("persistent://fork/ns/slow-limiter", pulsar.getLocalMetadataStore());
    }

    /** A broker whose managed ledgers and compactor use the given mock BookKeeper. */
    private static final class MockBookKeeperPulsarService extends PulsarService {
        private final BookKeeper bookKeeper;

        MockBookKeeperPulsarService(ServiceConfiguration conf, BookKeeper bookKeeper) {
            super(conf);
            this.bookKeeper = bookKeeper;
        }

        @Override
        public BookKeeperClientFactory newBookKeeperClientFactory() {
            BookKeeper bk = bookKeeper;
            return new BookKeeperClientFactory() {
                @Override
                public CompletableFuture<BookKeeper> create(ServiceConfiguration conf, MetadataStoreExtended store,
                        EventLoopGroup eventLoopGroup, Optional<Class<? extends EnsemblePlacementPolicy>> policyClass,
                        Map<String, Object> properties) {
                    return CompletableFuture.completedFuture(bk);
                }

                @Override
                public CompletableFuture<BookKeeper> create(ServiceConfiguration conf, MetadataStoreExtended store,
                        EventLoopGroup eventLoopGroup, Optional<Class<? extends EnsemblePlacementPolicy>> policyClass,
                        Map<String, Object> properties, StatsLogger statsLogger) {
                    return CompletableFuture.completedFuture(bk);
                }

                @Override
                public void close() {
                    // The test owns the mock BookKeeper.
                }
            };
        }
    }
}
