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

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.client.PulsarMockBookKeeper;
import org.apache.bookkeeper.common.util.OrderedExecutor;
import org.apache.pulsar.metadata.api.MetadataStoreException;
import org.apache.pulsar.metadata.impl.AbstractMetadataStore;
import org.apache.pulsar.metadata.impl.FaultInjectionMetadataStore;

/**
 * The schedule explorer's environment: the holds and faults it injects into upstream's mock BookKeeper and
 * fault-injecting metadata store, and a quiescence wait that lets the seed, not wall time, decide the
 * interleaving: after each step every executor the cursor's work runs on is drained until nothing changes.
 */
final class ExplorerHarness {
    private static final Method ACCEPTED_NOT_DURABLE = ourMethod("getAcceptedNotDurableCount");
    private static final Method PAST_RECORD_CAP = ourMethod("getAcksPastRecordCapCount");
    private static final Field PENDING_READ_OPS = field(ManagedCursorImpl.class, "pendingReadOps");
    private static final Field WRITES_IN_FLIGHT = field(ManagedCursorImpl.class, "pendingMarkDeletedSubmittedCount");
    private static final Field IS_DIRTY = field(ManagedCursorImpl.class, "isDirty");
    private static final Field LEDGERS = field(PulsarMockBookKeeper.class, "ledgers");
    private static final Field MARK_DELETE_QUEUE = ourField("markDeleteQueue");

    private final PulsarMockBookKeeper bkc;
    private final FaultInjectionMetadataStore metadataStore;
    private final List<CompletableFuture<Void>> addEntryFailures;
    private final List<CompletableFuture<Void>> failures;
    private final List<?> metadataFailures;
    private final Queue<Long> addEntryDelays;
    private final List<Executor> executors = new ArrayList<>();
    private CompletableFuture<Void> readRelease;

    @SuppressWarnings("unchecked")
    ExplorerHarness(PulsarMockBookKeeper bkc, FaultInjectionMetadataStore metadataStore,
            List<OrderedExecutor> orderedExecutors) throws Exception {
        this.bkc = bkc;
        this.metadataStore = metadataStore;
        this.addEntryFailures = (List<CompletableFuture<Void>>) field(PulsarMockBookKeeper.class, "addEntryFailures")
                .get(bkc);
        this.failures = (List<CompletableFuture<Void>>) field(PulsarMockBookKeeper.class, "failures").get(bkc);
        this.metadataFailures = (List<?>) field(FaultInjectionMetadataStore.class, "failures").get(metadataStore);
        Map<Executor, Boolean> distinct = new IdentityHashMap<>();
        distinct.put((Executor) field(PulsarMockBookKeeper.class, "executor").get(bkc), true);
        for (OrderedExecutor ordered : orderedExecutors) {
            for (int i = 0; i < 16; i++) {
                distinct.put(ordered.chooseThread(i), true);
            }
        }
        // The metadata store's notification executor ("eventExecutor" from 4.2 on, "executor" on 4.0).
        Object store = field(FaultInjectionMetadataStore.class, "store").get(metadataStore);
        if (store instanceof AbstractMetadataStore) {
            for (String name : new String[] {"eventExecutor", "executor"}) {
                try {
                    distinct.put((Executor) field(AbstractMetadataStore.class, name).get(store), true);
                    break;
                } catch (IllegalStateException absent) {
                    // not on this line
                }
            }
        }
        executors.addAll(distinct.keySet());
        this.addEntryDelays = (Queue<Long>) field(PulsarMockBookKeeper.class, "addEntryDelaysMillis").get(bkc);
        noAddDelays();
        // The mock sleeps 1 ms per add and per read by default (5.0.0-M1's testmocks): the explorer decides the
        // delays itself. Older mocks have no such setting.
        for (String setter : new String[] {"setDefaultAddEntryDelayMillis", "setDefaultReadEntriesDelayMillis"}) {
            try {
                PulsarMockBookKeeper.class.getMethod(setter, long.class).invoke(bkc, 0L);
            } catch (NoSuchMethodException e) {
                // no default delay on this line
            }
        }
    }

    // ---- reflection: members that are private on 4.0.8, or exist only in our jar ----

    static Field field(Class<?> type, String name) {
        try {
            Field f = type.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Field ourField(String name) {
        try {
            Field f = ManagedCursorImpl.class.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            return null; // upstream's jar
        }
    }

    /** Whether a reset's record is being written (our jar only: false on upstream's, which has no barrier). */
    static boolean barrierInFlight(ManagedCursorImpl cursor) {
        if (MARK_DELETE_QUEUE == null) {
            return false;
        }
        try {
            return ((MarkDeleteQueue<?>) MARK_DELETE_QUEUE.get(cursor)).isBarrierInFlight();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Method ourMethod(String name) {
        try {
            return ManagedCursorImpl.class.getMethod(name);
        } catch (NoSuchMethodException e) {
            return null; // upstream's jar
        }
    }

    /** The acks the rate limiter holds (our jar only), or -1 where the method does not exist. */
    static int acceptedNotDurable(ManagedCursorImpl cursor) {
        return invokeCount(ACCEPTED_NOT_DURABLE, cursor);
    }

    /** Acks our cursor holds because a record's caps left them out (-1 on upstream's jar). */
    static int pastRecordCap(ManagedCursorImpl cursor) {
        return invokeCount(PAST_RECORD_CAP, cursor);
    }

    private static int invokeCount(Method count, ManagedCursorImpl cursor) {
        if (count == null) {
            return -1;
        }
        try {
            return (int) count.invoke(cursor);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static boolean hasAcceptedSignal() {
        return ACCEPTED_NOT_DURABLE != null;
    }

    static int pendingReadOps(ManagedCursorImpl cursor) {
        return intField(PENDING_READ_OPS, cursor);
    }

    static int writesInFlight(ManagedCursorImpl cursor) {
        return intField(WRITES_IN_FLIGHT, cursor);
    }

    /** The cursor ledger's id, -1 when the cursor has none. */
    static long cursorLedgerId(ManagedCursorImpl cursor) {
        LedgerHandle lh = cursor.cursorLedger;
        return lh == null ? -1 : lh.getId();
    }

    static boolean dirty(ManagedCursorImpl cursor) {
        try {
            return IS_DIRTY.getBoolean(cursor);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static int queued(ManagedCursorImpl cursor) {
        synchronized (cursor.pendingMarkDeleteOps) {
            return cursor.pendingMarkDeleteOps.size();
        }
    }

    private static int intField(Field f, Object target) {
        try {
            return f.getInt(target);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- bookie adds: an ordered sequence of slots ----
    //
    // Every add the mock performs takes the first entry of its addEntryFailures list and appends its entry when
    // that future completes. A bookie keeps the adds of a ledger in order: an add issued after a held one cannot
    // complete before it, and when an add fails the adds already in flight behind it fail too. The explorer keeps
    // that order: a hold is followed by unresolved "follower" slots, and slots are resolved strictly in order.

    private static final int PASS = 0;
    private static final int HOLD = 1;
    private static final int FOLLOWERS = 16;

    private static final class Slot {
        final CompletableFuture<Void> future = new CompletableFuture<>();
        int fate = PASS;
        // BKException code when failing.
        int failCode;
        boolean resolved;
    }

    private final List<Slot> slots = new ArrayList<>();

    /** Holds the next add in order (behind any add already held). */
    void holdAdd() {
        synchronized (bkc) {
            Slot s = nextUnclaimedFollower();
            s.fate = HOLD;
            resolveInOrder();
        }
    }

    /** Fails the next add in order (behind any add already held). */
    void failAdd(int code) {
        synchronized (bkc) {
            Slot s = nextUnclaimedFollower();
            s.fate = -1;
            s.failCode = code;
            resolveInOrder();
        }
    }

    /**
     * Releases the first hold: its add and those behind it complete in order (or it fails, and so do the adds
     * already in flight behind it). Returns "taken", "untaken" or null when nothing is held.
     */
    String releaseFirstHold(boolean fail, int code) {
        synchronized (bkc) {
            for (Slot s : slots) {
                if (!s.resolved && s.fate == HOLD) {
                    String what = taken(s) ? "taken" : "untaken";
                    if (fail) {
                        s.fate = -1;
                        s.failCode = code;
                    } else {
                        s.fate = PASS;
                    }
                    resolveInOrder();
                    return what;
                }
            }
            return null;
        }
    }

    /** Drops the faults and holds no add has claimed yet (the followers that keep adds in order stay). */
    void dropUnclaimedAddFaults() {
        synchronized (bkc) {
            for (Slot s : slots) {
                if (!s.resolved && s.fate != PASS && !taken(s)) {
                    s.fate = PASS;
                }
            }
            resolveInOrder();
        }
    }

    /**
     * 4.0.8's mock sleeps 1 ms per add unless its queue of per-add delays says otherwise (5.0.0-M1's falls back
     * to its default delay, set to 0 above): keeps that queue full of zeros.
     */
    void noAddDelays() {
        while (addEntryDelays.size() < 256) {
            addEntryDelays.add(0L);
        }
    }

    /** Unclaimed slots and faults are dropped, then every hold is released in order. */
    void releaseAllAdds() {
        noAddDelays();
        synchronized (bkc) {
            for (Slot s : slots) {
                if (!taken(s)) {
                    removeFromMock(s);
                    s.resolved = true;
                } else if (s.fate == HOLD) {
                    s.fate = PASS;
                }
            }
            resolveInOrder();
            slots.clear();
            addEntryFailures.clear();
            failures.clear();
        }
    }

    /**
     * A crash: the slots no add took are dropped, so that the second factory's writes pass; the adds already held
     * stay held until {@link #releaseAllAdds()}.
     */
    void dropUntakenAdds() {
        synchronized (bkc) {
            for (Slot s : slots) {
                if (!s.resolved && !taken(s)) {
                    removeFromMock(s);
                    s.resolved = true;
                }
            }
            addEntryFailures.clear();
        }
    }

    int pendingAddInjections() {
        synchronized (bkc) {
            return addEntryFailures.size();
        }
    }

    int heldAdds() {
        synchronized (bkc) {
            int n = 0;
            for (Slot s : slots) {
                if (!s.resolved && taken(s)) {
                    n++;
                }
            }
            return n;
        }
    }

    private Slot nextUnclaimedFollower() {
        for (Slot s : slots) {
            if (!s.resolved && s.fate == PASS && !taken(s)) {
                return s;
            }
        }
        return append();
    }

    private Slot append() {
        Slot s = new Slot();
        addEntryFailures.add(s.future);
        slots.add(s);
        return s;
    }

    // Resolves slots from the first one on, up to the first hold. Behind a hold, keeps enough followers that no
    // later add overtakes it; without one, drops the passing slots no add took (the mock then passes adds).
    private void resolveInOrder() {
        if (resolveUpToFirstHold()) {
            keepFollowersBehindTheHold();
        } else {
            dropResolvedSlots();
        }
    }

    /** True when a hold stopped the resolution. */
    private boolean resolveUpToFirstHold() {
        for (int i = 0; i < slots.size(); i++) {
            Slot s = slots.get(i);
            if (s.resolved) {
                continue;
            }
            if (s.fate == HOLD) {
                return true;
            }
            boolean wasTaken = taken(s);
            s.resolved = true;
            if (s.fate == PASS) {
                s.future.complete(null);
            } else {
                if (wasTaken) {
                    failTakenBehind(i, s.failCode);
                }
                s.future.completeExceptionally(BKException.create(s.failCode));
            }
        }
        return false;
    }

    // A bookie fails the adds already in flight behind a failed one.
    private void failTakenBehind(int failed, int failCode) {
        for (int j = failed + 1; j < slots.size(); j++) {
            Slot behind = slots.get(j);
            if (!behind.resolved && taken(behind)) {
                behind.fate = -1;
                behind.failCode = failCode;
            }
        }
    }

    private void keepFollowersBehindTheHold() {
        int followers = 0;
        for (int i = slots.size() - 1; i >= 0 && slots.get(i).fate == PASS && !slots.get(i).resolved
                && !taken(slots.get(i)); i--) {
            followers++;
        }
        for (; followers < FOLLOWERS; followers++) {
            append();
        }
    }

    private void dropResolvedSlots() {
        for (Slot s : new ArrayList<>(slots)) {
            if (s.resolved && (taken(s) || s.fate == PASS)) {
                removeFromMock(s);
                slots.remove(s);
            }
        }
    }

    private boolean taken(Slot s) {
        for (CompletableFuture<Void> f : addEntryFailures) {
            if (f == s.future) {
                return false;
            }
        }
        return true;
    }

    private void removeFromMock(Slot s) {
        addEntryFailures.removeIf(f -> f == s.future);
    }

    boolean ledgerExists(long id) {
        return mockLedgers().containsKey(id);
    }

    long ledgerEntries(long id) {
        Object lh = mockLedgers().get(id);
        return lh == null ? -1 : ((org.apache.bookkeeper.client.LedgerHandle) lh).getLastAddConfirmed() + 1;
    }

    private Map<Long, ?> mockLedgers() {
        try {
            return (Map<Long, ?>) LEDGERS.get(bkc);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Fails the next metadata-store update of the cursor's node, once. */
    void failNextCursorPut(String ledgerName, String cursorName) {
        AtomicBoolean used = new AtomicBoolean();
        String suffix = "/" + ledgerName + "/" + cursorName;
        metadataStore.failConditional(new MetadataStoreException("explorer: injected metadata-store failure"),
                (op, path) -> op == FaultInjectionMetadataStore.OperationType.PUT && path.endsWith(suffix)
                        && used.compareAndSet(false, true));
    }

    /**
     * Refuses the next BookKeeper client operation with {@code code}: a ledger creation, open, close or delete, or
     * a read (the mock's programmed failure; adds have their own, above).
     */
    void failNextBookieOperation(int code) {
        bkc.failNow(code);
    }

    /** Drops the refusals no BookKeeper operation has claimed yet. */
    void dropBookieFaults() {
        synchronized (bkc) {
            failures.clear();
        }
    }

    /** Drops the metadata-store faults no write has claimed yet. */
    void dropMetadataFaults() {
        metadataFailures.clear();
    }

    // ---- bookie reads ----

    /** Holds every bookie read until {@link #releaseReads()}. */
    void holdReads() {
        if (readRelease == null) {
            CompletableFuture<Void> release = new CompletableFuture<>();
            readRelease = release;
            bkc.setReadHandleInterceptor((ledgerId, first, last, entries) -> release.thenApply(v -> entries));
        }
    }

    boolean readsHeld() {
        return readRelease != null;
    }

    /** New reads are no longer held; those already held stay held until {@link #releaseReads()}. */
    void stopHoldingNewReads() {
        bkc.setReadHandleInterceptor(null);
    }

    void releaseReads() {
        bkc.setReadHandleInterceptor(null);
        if (readRelease != null) {
            readRelease.complete(null);
            readRelease = null;
        }
    }

    // ---- quiescence ----

    /**
     * Drains every executor until the fingerprint is unchanged over three consecutive rounds (bounded).
     * Returns false when the state kept changing.
     */
    boolean settle(LongSupplier fingerprint) {
        long previous = fingerprint.getAsLong();
        int stable = 0;
        for (int round = 0; round < 400; round++) {
            barrier();
            long now = fingerprint.getAsLong();
            if (now == previous) {
                if (++stable >= 3) {
                    return true;
                }
            } else {
                stable = 0;
                previous = now;
            }
        }
        return false;
    }

    private void barrier() {
        List<CompletableFuture<Void>> done = new ArrayList<>(executors.size());
        for (Executor e : executors) {
            CompletableFuture<Void> f = new CompletableFuture<>();
            try {
                e.execute(() -> f.complete(null));
                done.add(f);
            } catch (RuntimeException rejected) {
                // a shut-down executor runs nothing more
            }
        }
        for (CompletableFuture<Void> f : done) {
            try {
                f.get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                return; // an executor blocked for 5 s: the caller sees the fingerprint move or not
            }
        }
    }
}
