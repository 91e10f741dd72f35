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

import static org.awaitility.Awaitility.await;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.Entry;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.bookkeeper.test.MockedBookKeeperTestCase;

/**
 * Cursor acknowledgement and reset scenarios on the mock BookKeeper: a held read, and a crash (a second
 * factory over the same BookKeeper and metadata store, the first one never closed), so a test can check
 * that what a callback reported durable is what a restarted broker recovers.
 */
public abstract class ManagedCursorAckPathTestBase extends MockedBookKeeperTestCase {
    protected static final Duration WAIT = Duration.ofSeconds(10);

    private final List<ManagedLedgerFactoryImpl> crashFactories = new ArrayList<>();

    @Override
    protected void cleanUpTestCase() throws Exception {
        bkc.setReadHandleInterceptor(null);
        for (ManagedLedgerFactoryImpl f : crashFactories) {
            f.shutdown();
        }
        crashFactories.clear();
    }

    /** Entries p[0..n-1] on an inactive cursor, so that its reads go to the bookies. */
    protected static List<Position> addEntries(ManagedLedger ledger, ManagedCursorImpl cursor, int n)
            throws Exception {
        cursor.setInactive();
        List<Position> positions = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            positions.add(ledger.addEntry(("entry-" + i).getBytes()));
        }
        return positions;
    }

    /**
     * Holds every bookie read until the returned future completes, then starts one read on the cursor and
     * waits until the cursor counts it as pending: a mark-delete issued now is queued behind it.
     */
    protected CompletableFuture<Void> holdOneRead(ManagedCursorImpl cursor) {
        CompletableFuture<Void> release = new CompletableFuture<>();
        bkc.setReadHandleInterceptor((ledgerId, first, last, entries) -> release.thenApply(v -> entries));
        cursor.asyncReadEntries(1, new AsyncCallbacks.ReadEntriesCallback() {
            @Override
            public void readEntriesComplete(List<Entry> entries, Object ctx) {
                entries.forEach(Entry::release);
            }

            @Override
            public void readEntriesFailed(ManagedLedgerException exception, Object ctx) {
            }
        }, null, PositionFactory.LATEST);
        await().atMost(WAIT).until(() -> cursor.getPendingReadOpsCount() == 1);
        return release;
    }

    protected static int queued(ManagedCursorImpl cursor) {
        synchronized (cursor.pendingMarkDeleteOps) {
            return cursor.pendingMarkDeleteOps.size();
        }
    }

    /** Cursor-ledger (or metadata-store) writes issued and not completed. */
    protected static int writesInFlight(ManagedCursorImpl cursor) throws Exception {
        Field f = ManagedCursorImpl.class.getDeclaredField("pendingMarkDeletedSubmittedCount");
        f.setAccessible(true);
        return (int) f.get(cursor);
    }

    /** The cursor's lock (a private field on branch-4.0, protected later). */
    private static ReentrantReadWriteLock cursorLock(ManagedCursorImpl cursor) {
        try {
            Field f = ManagedCursorImpl.class.getDeclaredField("lock");
            f.setAccessible(true);
            return (ReentrantReadWriteLock) f.get(cursor);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The cursor as a broker restarted after a crash recovers it: nothing was closed. */
    protected ManagedCursorImpl crashAndRecover(String ledgerName, String cursorName, ManagedLedgerConfig config)
            throws Exception {
        ManagedLedgerFactoryImpl recovered = new ManagedLedgerFactoryImpl(metadataStore, bkc);
        crashFactories.add(recovered);
        return (ManagedCursorImpl) recovered.open(ledgerName, config).openCursor(cursorName);
    }

    /**
     * One operation's callback. Records how often it fired and whether it fired under the cursor's
     * pendingMarkDeleteOps monitor or its lock (a callback there can deadlock the broker).
     */
    protected static class Recorded implements AsyncCallbacks.MarkDeleteCallback,
            AsyncCallbacks.DeleteCallback, AsyncCallbacks.ResetCursorCallback {
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final AtomicInteger calls = new AtomicInteger();
        final List<String> violations = new CopyOnWriteArrayList<>();
        private final ManagedCursorImpl cursor;

        Recorded(ManagedCursorImpl cursor) {
            this.cursor = cursor;
        }

        boolean succeeded() {
            return done.isDone() && !done.isCompletedExceptionally();
        }

        private void fired(Throwable failure) {
            calls.incrementAndGet();
            if (Thread.holdsLock(cursor.pendingMarkDeleteOps)) {
                violations.add("called back under the pendingMarkDeleteOps monitor");
            }
            ReentrantReadWriteLock lock = cursorLock(cursor);
            if (lock.isWriteLockedByCurrentThread() || lock.getReadHoldCount() > 0) {
                violations.add("called back under the cursor lock");
            }
            if (failure == null) {
                done.complete(null);
            } else {
                done.completeExceptionally(failure);
            }
        }

        @Override
        public void markDeleteComplete(Object ctx) {
            fired(null);
        }

        @Override
        public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
            fired(exception);
        }

        @Override
        public void deleteComplete(Object ctx) {
            fired(null);
        }

        @Override
        public void deleteFailed(ManagedLedgerException exception, Object ctx) {
            fired(exception);
        }

        @Override
        public void resetComplete(Object ctx) {
            fired(null);
        }

        @Override
        public void resetFailed(ManagedLedgerException exception, Object ctx) {
            fired(exception);
        }
    }
}
