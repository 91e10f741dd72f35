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
package org.pulsarfork.workload;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.PulsarMockBookKeeper;
import org.apache.bookkeeper.common.util.OrderedScheduler;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.Entry;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerFactoryImpl;
import org.apache.pulsar.metadata.api.MetadataStoreConfig;
import org.apache.pulsar.metadata.api.extended.MetadataStoreExtended;

/**
 * One cursor on upstream's mock BookKeeper, acking a batch of entries. Loaded once per jar under test
 * in its own class loader, so it links against that jar's managed-ledger classes. Called by
 * reflection from the JMH benchmark (only JDK types cross the class-loader boundary).
 */
public class CursorAckWorkload {
    private final OrderedScheduler executor;
    private final PulsarMockBookKeeper bkc;
    private final MetadataStoreExtended store;
    private final ManagedLedgerFactoryImpl factory;
    private final boolean individual;
    private final boolean readInFlight;
    private final int batch;
    private int round;
    private ManagedLedger ledger;
    private ManagedCursor cursor;
    private List<Position> positions;
    private long submitNanos;
    private long settleNanos;

    public CursorAckWorkload(String kind, boolean readInFlight, int batch) throws Exception {
        this.individual = "individual".equals(kind);
        this.readInFlight = readInFlight;
        this.batch = batch;
        this.executor = OrderedScheduler.newSchedulerBuilder().numThreads(2).name("bench").build();
        this.bkc = new PulsarMockBookKeeper(executor);
        withoutMockLatency(bkc);
        this.store = MetadataStoreExtended.create("memory:local", MetadataStoreConfig.builder().build());
        this.factory = new ManagedLedgerFactoryImpl(store, bkc);
    }

    /**
     * The mock bookie of newer testmocks sleeps 1 ms in every add and read by default: the ack path
     * would be measured as that sleep (one per cursor-ledger write), and each batch would take seconds
     * to prepare. Older testmocks have no such delay, nor the setters.
     */
    private static void withoutMockLatency(PulsarMockBookKeeper bkc) throws Exception {
        for (String setter : new String[] {"setDefaultAddEntryDelayMillis", "setDefaultReadEntriesDelayMillis"}) {
            try {
                bkc.getClass().getMethod(setter, long.class).invoke(bkc, 0L);
            } catch (NoSuchMethodException e) {
                // No default delay in this testmocks version.
            }
        }
    }

    /** A fresh ledger with {@code batch} entries and a cursor at the start. */
    public void prepare() throws Exception {
        if (ledger != null) {
            deleteQuietly(ledger);
        }
        ledger = factory.open("bench-" + round++, new ManagedLedgerConfig().setMaxEntriesPerLedger(batch + 1));
        cursor = ledger.openCursor("c");
        // Inactive before the entries are added, so that a held read goes to the (mock) bookies.
        cursor.setInactive();
        byte[] payload = new byte[16];
        List<CompletableFuture<Position>> added = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            CompletableFuture<Position> f = new CompletableFuture<>();
            ledger.asyncAddEntry(payload, new AsyncCallbacks.AddEntryCallback() {
                @Override
                public void addComplete(Position position, io.netty.buffer.ByteBuf entryData, Object ctx) {
                    f.complete(position);
                }

                @Override
                public void addFailed(ManagedLedgerException exception, Object ctx) {
                    f.completeExceptionally(exception);
                }
            }, null);
            added.add(f);
        }
        positions = new ArrayList<>(batch);
        for (CompletableFuture<Position> f : added) {
            positions.add(f.get(60, TimeUnit.SECONDS));
        }
        // Create the cursor ledger now: a batch measured while it is being created would count
        // whatever happened to queue meanwhile, not the steady state.
        createCursorLedger(positions.get(0));
    }

    /**
     * The first mark-delete creates the cursor ledger. On upstream's jar (and ours before managed-ledger patch
     * 0013) a second, concurrent creation now and then makes naming that ledger in the metadata store fail
     * with BadVersion, and closing the ledger too; nothing measured depends on it (a batch only starts on a
     * fresh ledger whose cursor ledger exists). Retried, so that long runs do not end early.
     */
    private void createCursorLedger(Position first) throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                cursor.markDelete(first);
                return;
            } catch (ManagedLedgerException.BadVersionException e) {
                if (attempt == 3) {
                    throw e;
                }
            }
        }
    }

    /**
     * Deleted, not just closed: the mock bookie keeps every entry of a closed ledger in memory, and with
     * hundreds of batches' entries live each young GC took long enough to dominate the batch it landed in.
     */
    private static void deleteQuietly(ManagedLedger done) throws InterruptedException {
        try {
            done.delete();
        } catch (ManagedLedgerException.BadVersionException e) {
            // See createCursorLedger: the ledger is not used again.
        } catch (ManagedLedgerException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Acks every entry (asynchronously, waiting for all callbacks); returns the cursor-ledger writes it took. */
    public long ackAll() throws Exception {
        long writesBefore = cursor.getStats().getPersistLedgerSucceed();
        CompletableFuture<Void> release = null;
        if (readInFlight) {
            release = holdOneRead();
        }
        CountingCallbacks callbacks = new CountingCallbacks(batch - 1);
        long start = System.nanoTime();
        submitAcks(callbacks);
        long submitted = System.nanoTime();
        if (release != null) {
            releaseHeldRead(release);
        }
        if (!callbacks.done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("acks did not complete");
        }
        submitNanos += submitted - start;
        settleNanos += System.nanoTime() - submitted;
        return cursor.getStats().getPersistLedgerSucceed() - writesBefore;
    }

    /** Counts down once per ack settled, completed or failed. */
    private static final class CountingCallbacks
            implements AsyncCallbacks.DeleteCallback, AsyncCallbacks.MarkDeleteCallback {
        final CountDownLatch done;

        CountingCallbacks(int acks) {
            this.done = new CountDownLatch(acks);
        }

        @Override
        public void deleteComplete(Object ctx) {
            done.countDown();
        }

        @Override
        public void deleteFailed(ManagedLedgerException exception, Object ctx) {
            done.countDown();
        }

        @Override
        public void markDeleteComplete(Object ctx) {
            done.countDown();
        }

        @Override
        public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
            done.countDown();
        }
    }

    private void submitAcks(CountingCallbacks callbacks) {
        // Individual acks in an order that leaves holes for a while, as consumers on shared
        // subscriptions do: odd positions first, then even ones.
        for (int pass = 1; pass >= 0; pass--) {
            for (int i = 2 - pass; i < batch; i += 2) {
                if (individual) {
                    cursor.asyncDelete(positions.get(i), callbacks, null);
                } else if (pass == 0) {
                    cursor.asyncMarkDelete(positions.get(i), callbacks, null);
                } else {
                    callbacks.done.countDown();
                }
            }
        }
    }

    private void releaseHeldRead(CompletableFuture<Void> release) throws Exception {
        int queued = queuedMarkDeletes();
        release.complete(null);
        bkc.setReadHandleInterceptor(null);
        if (queued == 0) {
            throw new IllegalStateException("no ack queued behind the held read");
        }
    }

    /** Nanoseconds spent submitting acks, summed over every batch so far. */
    public long submitNanos() {
        return submitNanos;
    }

    /** Nanoseconds from the last ack submitted (and the read released) to the last callback, summed. */
    public long settleNanos() {
        return settleNanos;
    }

    private CompletableFuture<Void> holdOneRead() throws Exception {
        CompletableFuture<Void> release = new CompletableFuture<>();
        bkc.setReadHandleInterceptor((ledgerId, first, last, entries) -> release.thenApply(v -> entries));
        ManagedCursor reader = cursor;
        reader.asyncReadEntries(1, new AsyncCallbacks.ReadEntriesCallback() {
            @Override
            public void readEntriesComplete(List<Entry> entries, Object ctx) {
                entries.forEach(Entry::release);
            }

            @Override
            public void readEntriesFailed(ManagedLedgerException exception, Object ctx) {
            }
        }, null, PositionFactory.LATEST);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (reader.getStats() != null && pendingReads() == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("read not pending");
            }
            Thread.onSpinWait();
        }
        return release;
    }

    private int queuedMarkDeletes() throws Exception {
        java.lang.reflect.Field f = cursor.getClass().getDeclaredField("pendingMarkDeleteOps");
        f.setAccessible(true);
        java.util.Collection<?> ops = (java.util.Collection<?>) f.get(cursor);
        synchronized (ops) {
            return ops.size();
        }
    }

    private int pendingReads() throws Exception {
        java.lang.reflect.Field f = cursor.getClass().getDeclaredField("pendingReadOps");
        f.setAccessible(true);
        return (int) f.get(cursor);
    }

    public void close() throws Exception {
        factory.shutdown();
        store.close();
        bkc.shutdown();
        executor.shutdownNow();
    }
}
