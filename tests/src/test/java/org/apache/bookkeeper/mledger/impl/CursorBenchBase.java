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
import com.google.common.util.concurrent.GatedRateLimiter;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.Entry;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.bookkeeper.test.MockedBookKeeperTestCase;

/**
 * Shared set-up of the cursor scenarios: upstream's mock BookKeeper and fault-injecting metadata
 * store, a held read, and a crash (a second factory over the same BookKeeper and metadata store,
 * the first one never closed).
 */
public abstract class CursorBenchBase extends MockedBookKeeperTestCase {
    static final Duration WAIT = Duration.ofSeconds(10);

    protected final List<ManagedLedgerFactoryImpl> crashFactories = new ArrayList<>();

    @Override
    protected void cleanUpTestCase() throws Exception {
        bkc.setReadHandleInterceptor(null);
        for (ManagedLedgerFactoryImpl f : crashFactories) {
            f.shutdown();
        }
        crashFactories.clear();
    }

    /** A ledger with entries p[0..n-1] and an inactive cursor, so that reads go to the bookies. */
    protected List<Position> openWithEntries(ManagedLedger ledger, ManagedCursorImpl cursor, int n)
            throws Exception {
        cursor.setInactive();
        List<Position> positions = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            positions.add(ledger.addEntry(("entry-" + i).getBytes()));
        }
        return positions;
    }

    protected ManagedLedgerConfig config() {
        return new ManagedLedgerConfig();
    }

    /**
     * Holds every bookie read until the returned future completes, then starts one read on the
     * cursor and waits until the cursor counts it as pending.
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
        await().atMost(WAIT).until(() -> pendingReadOps(cursor) == 1);
        return release;
    }

    /** The cursor's in-flight read count (4.0.8 has no getter for it). */
    protected static int pendingReadOps(ManagedCursorImpl cursor) throws Exception {
        Field f = ManagedCursorImpl.class.getDeclaredField("pendingReadOps");
        f.setAccessible(true);
        return (int) f.get(cursor);
    }

    /** Cursor-ledger (or metadata-store) writes issued and not completed. */
    protected static int writesInFlight(ManagedCursorImpl cursor) throws Exception {
        Field f = ManagedCursorImpl.class.getDeclaredField("pendingMarkDeletedSubmittedCount");
        f.setAccessible(true);
        return (int) f.get(cursor);
    }

    /** The cursor's lock (protected from 4.2 on, private on 4.0). */
    protected static ReentrantReadWriteLock cursorLock(ManagedCursorImpl cursor) throws Exception {
        Field f = ManagedCursorImpl.class.getDeclaredField("lock");
        f.setAccessible(true);
        return (ReentrantReadWriteLock) f.get(cursor);
    }

    /**
     * A mark-delete through the asynchronous API, waited for: a fresh limiter grants it its one permit, so it is
     * durable when this returns. The synchronous markDelete takes no permit: the limiter never defers it.
     */
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
        written.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    /** Replaces the cursor's mark-delete rate limiter by one that never grants and stops its first caller. */
    protected static GatedRateLimiter installGatedLimiter(ManagedCursorImpl cursor, double rate) throws Exception {
        GatedRateLimiter gate = new GatedRateLimiter(rate);
        Field f = ManagedCursorImpl.class.getDeclaredField("markDeleteLimiter");
        f.setAccessible(true);
        f.set(cursor, gate);
        return gate;
    }

    protected static int queued(ManagedCursorImpl cursor) {
        synchronized (cursor.pendingMarkDeleteOps) {
            return cursor.pendingMarkDeleteOps.size();
        }
    }

    /**
     * The common starting point: entries p[0..9], cursor c1 with its mark-delete at p4, and a probe
     * with an "ack" and a "reset" outcome. With {@code withoutCursorLedger}, the cursor is the one a
     * crash recovers, which has no writable cursor ledger yet (NoLedger).
     */
    protected final class Scenario {
        final String name;
        final ManagedLedger ledger;
        final ManagedCursorImpl cursor;
        final List<Position> p;
        final CallbackProbe probe;
        final CallbackProbe.Outcome ack;
        final CallbackProbe.Outcome reset;

        Scenario(String name, boolean withoutCursorLedger) throws Exception {
            this.name = name;
            ManagedLedger opened = factory.open(name, config());
            ManagedCursorImpl first = (ManagedCursorImpl) opened.openCursor("c1");
            this.p = openWithEntries(opened, first, 10);
            first.markDelete(p.get(4));
            this.cursor = withoutCursorLedger ? crashAndRecover(name, "c1") : first;
            this.ledger = cursor.getManagedLedger();
            this.probe = new CallbackProbe(cursor);
            this.ack = probe.newOutcome("ack");
            this.reset = probe.newOutcome("reset");
        }

        /** The mark-delete position a reset to p0 sets. */
        Position beforeFirst() {
            return ledger.getPreviousPosition(p.get(0));
        }

        ManagedCursorImpl crash() throws Exception {
            return crashAndRecover(name, "c1");
        }
    }

    /** Recovers the cursor as a broker restarted after a crash would: nothing was closed. */
    protected ManagedCursorImpl crashAndRecover(String ledgerName, String cursorName) throws Exception {
        ManagedLedgerFactoryImpl recovered = new ManagedLedgerFactoryImpl(metadataStore, bkc);
        crashFactories.add(recovered);
        ManagedLedger ledger = recovered.open(ledgerName, config());
        return (ManagedCursorImpl) ledger.openCursor(cursorName);
    }
}
