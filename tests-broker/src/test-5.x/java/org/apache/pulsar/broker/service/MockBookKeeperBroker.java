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
package org.apache.pulsar.broker.service;

import io.netty.channel.EventLoopGroup;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
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

/**
 * A broker for tests that need one without a test base: a real {@link PulsarService} on an in-memory metadata
 * store, built the way a standalone is, with the {@link PulsarMockBookKeeper} in place of the standalone's local
 * bookie so that what was durable can be inspected and recovered; its admin and client, cluster {@code test} and
 * namespace {@code prop/ns}.
 */
public final class MockBookKeeperBroker implements AutoCloseable {
    public final PulsarMockBookKeeper bookKeeper;
    public final PulsarService pulsar;
    public final PulsarAdmin admin;
    public final PulsarClient client;
    private final OrderedExecutor bookKeeperExecutor;

    private MockBookKeeperBroker(OrderedExecutor bookKeeperExecutor, PulsarMockBookKeeper bookKeeper,
            PulsarService pulsar, PulsarAdmin admin, PulsarClient client) {
        this.bookKeeperExecutor = bookKeeperExecutor;
        this.bookKeeper = bookKeeper;
        this.pulsar = pulsar;
        this.admin = admin;
        this.client = client;
    }

    /** Starts a broker (quorums of one, one bundle a namespace), then {@code configure}'s changes to it. */
    public static MockBookKeeperBroker start(Consumer<ServiceConfiguration> configure) throws Exception {
        OrderedExecutor executor = OrderedExecutor.newBuilder().numThreads(1).name("mock-bookkeeper").build();
        PulsarMockBookKeeper bookKeeper = new PulsarMockBookKeeper(executor);
        ServiceConfiguration conf = brokerConfig();
        configure.accept(conf);
        PulsarService pulsar = new MockBookKeeperPulsarService(conf, bookKeeper);
        pulsar.start();
        PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(pulsar.getWebServiceAddress()).build();
        PulsarClient client = PulsarClient.builder().serviceUrl(pulsar.getBrokerServiceUrl()).build();
        MockBookKeeperBroker broker = new MockBookKeeperBroker(executor, bookKeeper, pulsar, admin, client);
        try {
            admin.clusters().createCluster("test",
                    ClusterData.builder().serviceUrl(pulsar.getWebServiceAddress()).build());
            admin.tenants().createTenant("prop", new TenantInfoImpl(Set.of(), Set.of("test")));
            admin.namespaces().createNamespace("prop/ns", Set.of("test"));
            return broker;
        } catch (Exception e) {
            broker.close();
            throw e;
        }
    }

    private static ServiceConfiguration brokerConfig() {
        ServiceConfiguration conf = new ServiceConfiguration();
        String store = "memory:broker-" + UUID.randomUUID();
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
        return conf;
    }

    @Override
    public void close() throws Exception {
        client.close();
        admin.close();
        pulsar.close();
        bookKeeper.shutdown();
        bookKeeperExecutor.shutdownNow();
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
