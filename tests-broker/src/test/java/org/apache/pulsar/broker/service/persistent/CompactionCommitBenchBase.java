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
import static org.mockito.AdditionalAnswers.delegatesTo;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyMap;
import static org.mockito.Mockito.doAnswer;
import static org.mockito.Mockito.mock;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerFactoryImpl;
import org.apache.pulsar.common.api.proto.CommandAck.AckType;
import org.apache.pulsar.compaction.CompactedTopicContext;
import org.apache.pulsar.compaction.CompactedTopicImpl;
import org.apache.pulsar.compaction.Compactor;
import org.apache.pulsar.metadata.api.MetadataStoreException;
import org.apache.pulsar.metadata.impl.FaultInjectionMetadataStore;

/**
 * A real PulsarCompactorSubscription and CompactedTopicImpl over a real managed ledger and upstream's mock
 * BookKeeper, for the compaction horizon (#26486): the broker serves a new compacted ledger and horizon before the
 * compaction cursor's mark-delete records them, so that readers do not skip data while the cursor moves (#12522).
 * When that mark-delete fails, the view the broker serves must be the one its durable state names. The failure:
 * the cursor-ledger add and the metadata-store write it falls back to both fail.
 */
public abstract class CompactionCommitBenchBase extends SubscriptionBenchBase {
    private static final String COMPACTION = Compactor.COMPACTION_SUBSCRIPTION;
    private static final Duration WAIT = Duration.ofSeconds(10);

    private FaultInjectionMetadataStore cursorStore;
    protected CompactedTopicImpl compactedTopic;
    protected ManagedCursor compactionCursor;
    private PulsarCompactorSubscription compactorSubscription;
    // Per mark-delete issued on the compaction cursor: the horizon served at that moment, and its outcome.
    protected final List<Position> horizonWhenIssued = new CopyOnWriteArrayList<>();
    private final List<CountDownLatch> outcomes = new CopyOnWriteArrayList<>();
    private final AtomicInteger issued = new AtomicInteger();

    /**
     * Compacted ledger {@code first} recorded at p3, then the cursor's write of compacted ledger {@code second}
     * at p6 fails at the bookies: the broker must serve {@code first} at p3 again. Returns {@code first}.
     */
    protected long secondCommitFailsAtTheBookies() throws Exception {
        long[] ledgers = firstCommitRecorded();
        long first = ledgers[0];
        long second = ledgers[1];

        // The cursor-ledger add fails, and so does the fallback to the metadata store that follows it.
        bookKeeper.addEntryFailAfter(0, BKException.Code.BookieHandleNotAvailableException);
        metadataStoreRefusesTheCompactionCursor();
        commit(p.get(6), second);
        awaitOutcome(1);
        assertServed(p.get(3), first, "after the compaction cursor failed to record compacted ledger " + second);
        return first;
    }

    /**
     * Opens the compaction subscription and records a first compacted ledger at p3. Returns it and a second one,
     * not recorded yet.
     */
    protected long[] firstCommitRecorded() throws Exception {
        openCompactionSubscription();
        long first = compactedLedger();
        long second = compactedLedger();
        commit(p.get(3), first);
        awaitOutcome(0);
        return new long[] {first, second};
    }

    protected void metadataStoreRefusesTheCompactionCursor() {
        cursorStore.failConditional(new MetadataStoreException("test: the metadata store refuses the cursor"),
                (op, path) -> op == FaultInjectionMetadataStore.OperationType.PUT && path.endsWith("/" + COMPACTION));
    }

    protected void openCompactionSubscription() throws Exception {
        // TestNG runs every method on one instance.
        horizonWhenIssued.clear();
        outcomes.clear();
        issued.set(0);
        cursorStore = new FaultInjectionMetadataStore(metadataStore);
        ManagedLedgerFactoryImpl faultyFactory = new ManagedLedgerFactoryImpl(cursorStore, bookKeeper);
        trackFactory(faultyFactory);
        ledger = faultyFactory.open(LEDGER, new ManagedLedgerConfig());
        ManagedCursor real = ledger.openCursor(COMPACTION);
        p = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            p.add(ledger.addEntry(("entry-" + i).getBytes()));
        }
        // The real cursor, its mark-delete callbacks observed: when the subscription heard of the outcome.
        compactionCursor = mock(ManagedCursor.class, delegatesTo(real));
        doAnswer(inv -> {
            horizonWhenIssued.add(compactedTopic.getCompactionHorizon().orElse(null));
            CountDownLatch outcome = new CountDownLatch(1);
            outcomes.add(outcome);
            MarkDeleteCallback callback = inv.getArgument(2);
            real.asyncMarkDelete(inv.getArgument(0), inv.getArgument(1), new MarkDeleteCallback() {
                @Override
                public void markDeleteComplete(Object ctx) {
                    callback.markDeleteComplete(ctx);
                    outcome.countDown();
                }

                @Override
                public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                    callback.markDeleteFailed(exception, ctx);
                    outcome.countDown();
                }
            }, inv.getArgument(3));
            // Returned: the mark-delete was applied and its write issued, or queued.
            issued.incrementAndGet();
            return null;
        }).when(compactionCursor).asyncMarkDelete(any(Position.class), anyMap(), any(), any());

        PersistentTopic topic = mockTopic();
        compactedTopic = new CompactedTopicImpl(bookKeeper);
        compactorSubscription = new PulsarCompactorSubscription(topic, compactedTopic, COMPACTION, compactionCursor);
    }

    /** A closed, empty compacted ledger: these tests check which ledger is served, not what it holds. */
    protected long compactedLedger() throws Exception {
        LedgerHandle lh = bookKeeper.createLedger(1, 1, 1, BookKeeper.DigestType.CRC32, new byte[0]);
        long id = lh.getId();
        lh.close();
        return id;
    }

    protected void commit(Position position, long compactedLedgerId) {
        compactorSubscription.acknowledgeMessage(List.of(position), AckType.Cumulative,
                Map.of(Compactor.COMPACTED_TOPIC_LEDGER_PROPERTY, compactedLedgerId));
    }

    /** Waits until the compaction cursor's mark-delete #index has returned: applied, its write issued or queued. */
    protected void awaitIssued(int index) {
        await().atMost(WAIT).until(() -> issued.get() > index);
    }

    protected void awaitOutcome(int index) throws Exception {
        await().atMost(WAIT).until(() -> outcomes.size() > index);
        assertEquals(outcomes.get(index).await(WAIT.toSeconds(), TimeUnit.SECONDS), true,
                "the compaction cursor's mark-delete #" + index + " never completed nor failed");
    }

    protected void assertServed(Position horizon, long ledgerId, String when) throws Exception {
        Position servedHorizon;
        CompletableFuture<CompactedTopicContext> served;
        // Read together, as CompactedTopicImpl documents; waited for outside its monitor.
        synchronized (compactedTopic) {
            servedHorizon = compactedTopic.getCompactionHorizon().orElse(null);
            served = compactedTopic.getCompactedTopicContextFuture();
        }
        assertNotNull(served, "no compacted view is served " + when);
        long servedLedger = served.get(WAIT.toSeconds(), TimeUnit.SECONDS).getLedger().getId();
        assertEquals(servedLedger + "@" + servedHorizon, ledgerId + "@" + horizon,
                "the compacted ledger and horizon the broker serves " + when + " (ledger@horizon), which must be"
                        + " those the compaction cursor's durable state names");
    }

    protected static void assertDurable(ManagedCursor recovered, Position horizon, long ledgerId, String after) {
        Long named = recovered.getProperties().get(Compactor.COMPACTED_TOPIC_LEDGER_PROPERTY);
        assertEquals(named + "@" + recovered.getMarkDeletedPosition(), ledgerId + "@" + horizon,
                "after " + after + ", the compaction cursor names (ledger@mark-delete) what the broker served"
                        + " before it");
    }

    protected ManagedCursor recoverCompactionCursor() throws Exception {
        ManagedLedgerFactoryImpl recovered = new ManagedLedgerFactoryImpl(metadataStore, bookKeeper);
        trackFactory(recovered);
        return recovered.open(LEDGER, new ManagedLedgerConfig()).openCursor(COMPACTION);
    }
}
