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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.PulsarMockBookKeeper;
import org.apache.bookkeeper.common.util.OrderedExecutor;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerFactoryImpl;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.service.Dispatcher;
import org.apache.pulsar.metadata.api.MetadataStoreConfig;
import org.apache.pulsar.metadata.api.extended.MetadataStoreExtended;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;

/**
 * A PersistentSubscription over a real managed ledger (upstream's mock BookKeeper, an in-memory metadata
 * store), its topic and dispatcher mocked: the broker classes that react to the cursor's callbacks, with
 * whichever managed-ledger and broker jars the run puts on the class path. A crash is a second factory
 * over the same stores, the first never closed.
 */
public abstract class SubscriptionBenchBase {
    protected static final String LEDGER = "public/default/persistent/acks";
    // This slow a limiter never permits a second write during a test.
    protected static final double NO_PERMIT_RATE = 0.001;
    // At the slowest rate a test spends a permit at (0.1/s), a write waits up to ten seconds for one.
    private static final long PERMIT_WAIT_SECONDS = 30;

    protected OrderedExecutor executor;
    protected PulsarMockBookKeeper bookKeeper;
    protected MetadataStoreExtended metadataStore;
    protected ManagedLedgerFactoryImpl factory;
    private final List<ManagedLedgerFactoryImpl> crashFactories = new ArrayList<>();

    protected ManagedLedger ledger;
    protected ManagedCursor cursor;
    protected List<Position> p;
    protected Dispatcher dispatcher;
    protected PersistentSubscription subscription;

    @BeforeMethod(alwaysRun = true)
    public void setUpStores() throws Exception {
        executor = OrderedExecutor.newBuilder().numThreads(1).name("subscription-bk").build();
        bookKeeper = new PulsarMockBookKeeper(executor);
        metadataStore = MetadataStoreExtended.create("memory:local", MetadataStoreConfig.builder().build());
        factory = new ManagedLedgerFactoryImpl(metadataStore, bookKeeper);
    }

    @AfterMethod(alwaysRun = true)
    public void tearDownStores() throws Exception {
        for (ManagedLedgerFactoryImpl f : crashFactories) {
            f.shutdown();
        }
        crashFactories.clear();
        factory.shutdown();
        bookKeeper.shutdown();
        metadataStore.close();
        executor.shutdownNow();
    }

    /**
     * Entries p0..p9 and subscription "sub" whose cursor's limiter just granted its one permit to
     * markDelete(p1): every later ack is throttled until flush, close or a timed write.
     */
    protected void openThrottledSubscription() throws Exception {
        openThrottledSubscription(NO_PERMIT_RATE);
    }

    /** As {@link #openThrottledSubscription()}, the limiter granting {@code rate} writes per second. */
    protected void openThrottledSubscription(double rate) throws Exception {
        ledger = factory.open(LEDGER, new ManagedLedgerConfig().setThrottleMarkDelete(rate));
        cursor = ledger.openCursor("sub");
        p = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            p.add(ledger.addEntry(("entry-" + i).getBytes()));
        }

        PersistentTopic topic = mockTopic();
        subscription = new PersistentSubscription(topic, "sub", cursor, false);
        dispatcher = mock(Dispatcher.class, RETURNS_DEEP_STUBS);
        subscription.dispatcher = dispatcher;
        // Last: building the mocks can take longer than a limiter period, which would grant a new permit.
        markDeleteTakingThePermit(p.get(1), Map.of());
    }

    /** The subscription's topic: a mock over {@link #ledger} with a default broker configuration. */
    protected PersistentTopic mockTopic() {
        PersistentTopic topic = mock(PersistentTopic.class, RETURNS_DEEP_STUBS);
        ServiceConfiguration config = new ServiceConfiguration();
        when(topic.getName()).thenReturn("persistent://public/default/acks");
        when(topic.getBrokerService().getPulsar().getConfig()).thenReturn(config);
        when(topic.getBrokerService().pulsar().getConfig()).thenReturn(config);
        when(topic.getManagedLedger()).thenReturn(ledger);
        return topic;
    }

    /**
     * A mark-delete through the asynchronous API, waited for: when the limiter has a permit it takes it, and it
     * is durable when this returns. The synchronous markDelete takes no permit: the limiter never defers it.
     */
    protected void markDeleteTakingThePermit(Position position, Map<String, Long> properties) throws Exception {
        markDeleteTakingThePermit(cursor, position, properties);
    }

    protected static void markDeleteTakingThePermit(ManagedCursor cursor, Position position,
            Map<String, Long> properties) throws Exception {
        CompletableFuture<Void> written = new CompletableFuture<>();
        cursor.asyncMarkDelete(position, properties, new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                written.complete(null);
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                written.completeExceptionally(exception);
            }
        }, null);
        written.get(PERMIT_WAIT_SECONDS, TimeUnit.SECONDS);
    }

    /** The subscription's cursor as a broker restarted after a crash would recover it. */
    protected ManagedCursor crashAndRecover() throws Exception {
        ManagedLedgerFactoryImpl recovered = new ManagedLedgerFactoryImpl(metadataStore, bookKeeper);
        trackFactory(recovered);
        return recovered.open(LEDGER, new ManagedLedgerConfig()).openCursor("sub");
    }

    /** A factory of the test's own, over the same stores: shut down after the test. */
    protected void trackFactory(ManagedLedgerFactoryImpl other) {
        crashFactories.add(other);
    }
}
