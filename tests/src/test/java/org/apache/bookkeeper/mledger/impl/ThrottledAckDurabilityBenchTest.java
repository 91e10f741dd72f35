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
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.pulsar.metadata.api.MetadataStoreException;
import org.apache.pulsar.metadata.impl.FaultInjectionMetadataStore;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * The mark-delete rate limiter (#26484): upstream reported a throttled ack complete although nothing
 * was written, and a crash then lost it. Every test checks the rule "a crash recovers at least every
 * position reported complete"; ours reports a throttled ack accepted at once and complete only after
 * a write that holds it is durable.
 */
public class ThrottledAckDurabilityBenchTest extends CursorBenchBase {
    // A limiter this slow never permits a second write during a test: only flush, close or another
    // write can make a throttled ack durable.
    private static final double NO_PERMIT_RATE = 0.001;
    private static final String COMPACTED_LEDGER = "CompactedTopicLedger";
    // The broker client's default operation timeout, which bounds the compactor's ack receipt.
    private static final long COMPACTOR_TIMEOUT_SECONDS = 30;

    /** Entries p0..p9 on a cursor whose limiter just granted its one permit to markDelete(p1). */
    private final class Throttled {
        final String name;
        final ManagedCursorImpl cursor;
        final List<Position> p;
        final CallbackProbe probe;

        Throttled(String name, String cursorName, double rate, Map<String, Long> firstProperties)
                throws Exception {
            this.name = name;
            ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig().setThrottleMarkDelete(rate));
            this.cursor = (ManagedCursorImpl) ledger.openCursor(cursorName);
            this.p = openWithEntries(ledger, cursor, 10);
            // A fresh limiter grants its first request: this write is durable before the test starts.
            markDeleteTakingThePermit(cursor, p.get(1), firstProperties);
            this.probe = new CallbackProbe(cursor);
        }

        ManagedCursorImpl crash() throws Exception {
            return crashAndRecover(name, cursor.getName());
        }
    }

    /**
     * The synchronous API is not deferred by the limiter: its caller waits for the durable write, and the broker
     * calls it on shared threads (the backlog-quota trim). Each call returns well within one limiter period and
     * its effect survives a crash. Upstream returns at once, with nothing written.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void theSynchronousApiWritesAtOnceUnderTheLimiter() throws Exception {
        Throttled md = new Throttled("sync-mark-delete", "c1", NO_PERMIT_RATE, Map.of());
        md.cursor.markDelete(md.p.get(3));
        assertEquals(md.crash().getMarkDeletedPosition(), md.p.get(3), "markDelete(p3)");

        Throttled delete = new Throttled("sync-delete", "c1", NO_PERMIT_RATE, Map.of());
        delete.cursor.delete(delete.p.get(5));
        assertTrue(delete.crash().isMessageDeleted(delete.p.get(5)), "delete(p5)");

        Throttled skip = new Throttled("sync-skip", "c1", NO_PERMIT_RATE, Map.of());
        skip.cursor.skipEntries(2, ManagedCursor.IndividualDeletedEntries.Include);
        assertEquals(skip.crash().getMarkDeletedPosition(), skip.p.get(3), "skipEntries(2) from p1");

        Throttled clear = new Throttled("sync-clear-backlog", "c1", NO_PERMIT_RATE, Map.of());
        clear.cursor.clearBacklog();
        // The recovered ledger has a new, empty ledger: the mark-delete position may be its start.
        assertEquals(clear.crash().getNumberOfEntriesInBacklog(false), 0L, "clearBacklog()");

        // The admin's clear-backlog and skip go through the asynchronous calls: written at once too.
        Throttled adminClear = new Throttled("async-clear-backlog", "c1", NO_PERMIT_RATE, Map.of());
        CompletableFuture<Void> cleared = new CompletableFuture<>();
        adminClear.cursor.asyncClearBacklog(new AsyncCallbacks.ClearBacklogCallback() {
            @Override
            public void clearBacklogComplete(Object ctx) {
                cleared.complete(null);
            }

            @Override
            public void clearBacklogFailed(ManagedLedgerException exception, Object ctx) {
                cleared.completeExceptionally(exception);
            }
        }, null);
        cleared.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertEquals(adminClear.crash().getNumberOfEntriesInBacklog(false), 0L, "asyncClearBacklog()");
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void throttledMarkDeleteIsNotReportedCompleteBeforeItIsWritten() throws Exception {
        Throttled t = new Throttled("throttled-md-crash", "c1", NO_PERMIT_RATE, Map.of());
        CallbackProbe.Outcome ack = t.probe.newOutcome("markDelete(p6)");
        t.cursor.asyncMarkDelete(t.p.get(6), t.probe.markDelete(ack), null);
        assertEquals(t.cursor.getMarkDeletedPosition(), t.p.get(6), "applied in memory at once");

        ManagedCursorImpl recovered = t.crash();
        if (ack.succeeded()) {
            assertEquals(recovered.getMarkDeletedPosition(), t.p.get(6),
                    "a mark-delete reported complete must survive a crash");
        }
        assertEquals(recovered.getMarkDeletedPosition(), t.p.get(1));
        assertTrue(ack.accepted.isDone(), "a throttled mark-delete is reported accepted");
        assertFalse(ack.future.isDone(), "and not complete: nothing holds it yet");
        assertEquals(t.cursor.getAcceptedNotDurableCount(), 1);
        assertEquals(t.probe.violations, List.of());
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void throttledIndividualDeleteIsNotReportedCompleteBeforeItIsWritten() throws Exception {
        Throttled t = new Throttled("throttled-delete-crash", "c1", NO_PERMIT_RATE, Map.of());
        CallbackProbe.Outcome ack = t.probe.newOutcome("delete(p3)");
        t.cursor.asyncDelete(t.p.get(3), t.probe.delete(ack), null);
        assertTrue(t.cursor.isMessageDeleted(t.p.get(3)), "applied in memory at once");

        ManagedCursorImpl recovered = t.crash();
        if (ack.succeeded()) {
            assertTrue(recovered.isMessageDeleted(t.p.get(3)), "a delete reported complete must survive a crash");
        }
        assertFalse(recovered.isMessageDeleted(t.p.get(3)));
        assertTrue(ack.accepted.isDone(), "a throttled delete is reported accepted");
        assertFalse(ack.future.isDone(), "and not complete: nothing holds it yet");
        assertEquals(t.probe.violations, List.of());
    }

    @DataProvider
    public Object[][] limiterRates() {
        // The broker default (managedLedgerDefaultMarkDeleteRateLimit); standalone.conf's 0.1/s, whose period is
        // ten seconds on each jar set and line, in the limiter's long run (-Dlimiter.scale=true, README).
        return Boolean.getBoolean("limiter.scale") ? new Object[][] {{1.0}, {0.1}} : new Object[][] {{1.0}};
    }

    /**
     * No flush: the cursor writes within one limiter period by itself. Prints the measured latency from
     * "accepted" to "complete".
     */
    @Test(groups = UPSTREAM_BUG, dataProvider = "limiterRates", timeOut = 60_000)
    public void throttledAcksBecomeDurableWithinOneLimiterPeriod(double rate) throws Exception {
        Throttled t = new Throttled("throttled-period-" + rate, "c1", rate, Map.of());
        CallbackProbe.Outcome md = t.probe.newOutcome("markDelete(p5)");
        CallbackProbe.Outcome delete = t.probe.newOutcome("delete(p8)");
        long start = System.nanoTime();
        t.cursor.asyncMarkDelete(t.p.get(5), t.probe.markDelete(md), null);
        t.cursor.asyncDelete(t.p.get(8), t.probe.delete(delete), null);
        long periodMillis = (long) (1000 / rate);
        await().atMost(Duration.ofMillis(periodMillis + 5_000))
                .until(() -> md.future.isDone() && delete.future.isDone());
        md.future.get();
        delete.future.get();

        ManagedCursorImpl recovered = t.crash();
        assertEquals(recovered.getMarkDeletedPosition(), t.p.get(5), "complete means a crash recovers it");
        assertTrue(recovered.isMessageDeleted(t.p.get(8)), "complete means a crash recovers it");
        long latencyMillis = TimeUnit.NANOSECONDS.toMillis(Math.max(md.firedNanos, delete.firedNanos) - start);
        System.out.printf("durable completion latency at %.1f mark-deletes/s: %d ms (period %d ms)%n", rate,
                latencyMillis, periodMillis);
        assertTrue(md.accepted.isDone() && delete.accepted.isDone());
        assertTrue(latencyMillis <= periodMillis + 2_000, "within one limiter period (and 2 s of slack): "
                + latencyMillis + " ms");
        assertEquals(t.cursor.getAcceptedNotDurableCount(), 0);
        assertEquals(t.probe.violations, List.of());
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void flushPersistsWhenTheLimiterHasNoPermit() throws Exception {
        Throttled t = new Throttled("throttled-flush", "c1", NO_PERMIT_RATE, Map.of());
        CallbackProbe.Outcome ack = t.probe.newOutcome("markDelete(p6)");
        t.cursor.asyncMarkDelete(t.p.get(6), t.probe.markDelete(ack), null);
        t.cursor.flush();
        ack.future.get(10, TimeUnit.SECONDS);

        assertEquals(t.crash().getMarkDeletedPosition(), t.p.get(6), "flush must write, limiter or not");
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * A reset queued behind a read, then a throttled delete: applied before the reset's state change, the delete must
     * not carry the reset's properties (none), which the reset installs only once its write is durable. The reset's
     * write then fails, at the bookie and in the metadata store: the next record must still carry the properties of
     * markDelete(p1, {k=1}), reported complete before all of it.
     */
    @Test(timeOut = 60_000)
    public void anAckQueuedBehindAResetThatFailsDoesNotWriteTheResetsProperties() throws Exception {
        Throttled t = new Throttled("ack-behind-failed-reset", "c1", NO_PERMIT_RATE, Map.of("k", 1L));
        CompletableFuture<Void> read = holdOneRead(t.cursor);
        CallbackProbe.Outcome reset = t.probe.newOutcome("reset(p5)");
        t.cursor.asyncResetCursor(t.p.get(5), false, t.probe.reset(reset));
        await().atMost(WAIT).until(() -> queued(t.cursor) == 1);
        CallbackProbe.Outcome delete = t.probe.newOutcome("delete(p2)");
        t.cursor.asyncDelete(t.p.get(2), t.probe.delete(delete), null);

        AtomicBoolean metadataFailed = new AtomicBoolean();
        metadataStore.failConditional(new MetadataStoreException("injected"),
                (op, path) -> op == FaultInjectionMetadataStore.OperationType.PUT && path.endsWith("/c1")
                        && metadataFailed.compareAndSet(false, true));
        bkc.failNow(BKException.Code.BookieHandleNotAvailableException);
        read.complete(null);
        await().atMost(WAIT).until(reset.future::isDone);
        assertFalse(reset.succeeded(), "the reset's write failed at the bookie and in the metadata store");

        t.cursor.flush();
        assertEquals(t.crash().getProperties().get("k"), Long.valueOf(1L),
                "markDelete(p1, {k=1}) reported durable, then a record with the failed reset's properties");
        assertEquals(t.probe.violations, List.of());
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void failedFlushLeavesTheCursorDirtyAndALaterFlushPersists() throws Exception {
        Throttled t = new Throttled("throttled-flush-fails", "c1", NO_PERMIT_RATE, Map.of());
        CallbackProbe.Outcome ack = t.probe.newOutcome("markDelete(p6)");
        t.cursor.asyncMarkDelete(t.p.get(6), t.probe.markDelete(ack), null);
        // The cursor-ledger write fails, and so does the fallback to the metadata store.
        AtomicBoolean metadataFailed = new AtomicBoolean();
        metadataStore.failConditional(new MetadataStoreException("injected"),
                (op, path) -> op == FaultInjectionMetadataStore.OperationType.PUT && path.endsWith("/c1")
                        && metadataFailed.compareAndSet(false, true));
        bkc.failNow(BKException.Code.BookieHandleNotAvailableException);
        t.cursor.flush();
        await().atMost(WAIT).until(() -> metadataFailed.get() && dirty(t.cursor));
        // The metadata store's failure reaches the cursor as one task, ordered by ledger name on the factory's
        // scheduler, and marks the cursor dirty twice in it (the write's failure, then flush's own callback):
        // the await above may have seen the first mark only. A task queued behind it runs after both.
        CompletableFuture<Void> failureHandled = new CompletableFuture<>();
        factory.scheduledExecutor.executeOrdered(t.name, () -> failureHandled.complete(null));
        failureHandled.get(10, TimeUnit.SECONDS);
        assertTrue(dirty(t.cursor));

        // Applied and still held: the write that was to hold it failed, the next one makes it durable.
        assertFalse(ack.future.isDone(), "an ack is neither durable nor lost when one write fails");

        long writes = t.cursor.getStats().getPersistLedgerSucceed();
        t.cursor.flush();
        await().atMost(WAIT).until(() -> t.cursor.getStats().getPersistLedgerSucceed() > writes);
        await().atMost(WAIT).until(ack.future::isDone);
        assertTrue(ack.succeeded());
        assertFalse(dirty(t.cursor));
        assertEquals(t.crash().getMarkDeletedPosition(), t.p.get(6), "the second flush must persist");
        assertEquals(ack.calls.get(), 1);
        assertEquals(t.probe.violations, List.of());
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void closePersistsThrottledStateBeforeCompletingIt() throws Exception {
        Throttled t = new Throttled("throttled-close", "c1", NO_PERMIT_RATE, Map.of());
        CallbackProbe.Outcome md = t.probe.newOutcome("markDelete(p6)");
        CallbackProbe.Outcome delete = t.probe.newOutcome("delete(p8)");
        t.cursor.asyncMarkDelete(t.p.get(6), t.probe.markDelete(md), null);
        t.cursor.asyncDelete(t.p.get(8), t.probe.delete(delete), null);
        boolean completedBeforeClose = md.future.isDone() || delete.future.isDone();
        t.cursor.close();

        assertFalse(completedBeforeClose, "completed before anything was written");
        md.future.get(10, TimeUnit.SECONDS);
        delete.future.get(10, TimeUnit.SECONDS);
        ManagedCursorImpl recovered = t.crash();
        assertEquals(recovered.getMarkDeletedPosition(), t.p.get(6));
        assertTrue(recovered.isMessageDeleted(t.p.get(8)));
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * The compactor's ack carries the new compacted ledger; PulsarCompactorSubscription deletes the
     * previous one when it completes. Complete must mean that a crash recovers the new one.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void compactionCursorReportsTheNewCompactedLedgerOnlyOnceDurable() throws Exception {
        Throttled t = new Throttled("throttled-compaction", "__compaction", 1.0, Map.of(COMPACTED_LEDGER, 1L));
        CallbackProbe.Outcome ack = t.probe.newOutcome("markDelete(p6, CompactedTopicLedger=2)");
        t.cursor.asyncMarkDelete(t.p.get(6), Map.of(COMPACTED_LEDGER, 2L), t.probe.markDelete(ack), null);
        ack.future.get(10, TimeUnit.SECONDS);

        ManagedCursor recovered = t.crash();
        assertEquals(recovered.getProperties().get(COMPACTED_LEDGER), Long.valueOf(2),
                "the previous compacted ledger is deleted on completion: a crash must not go back to it");
        assertEquals(recovered.getMarkDeletedPosition(), t.p.get(6));
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * The compactor waits for its ack (5.0 ack receipt, bounded by the broker client's 30 s operation
     * timeout) and deletes the new compacted ledger when that wait fails. At a limiter period longer than
     * that timeout a throttled compaction ack would land after the compactor deleted the ledger it names, so
     * the compaction cursor is not throttled: its ack is durable after one write, whatever the rate.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void compactionCursorAckIsDurableWithinTheCompactorsTimeoutAtAnyLimiterRate() throws Exception {
        Throttled t = new Throttled("slow-limiter-compaction", "__compaction", NO_PERMIT_RATE,
                Map.of(COMPACTED_LEDGER, 1L));
        CallbackProbe.Outcome ack = t.probe.newOutcome("markDelete(p6, CompactedTopicLedger=2)");
        long start = System.nanoTime();
        t.cursor.asyncMarkDelete(t.p.get(6), Map.of(COMPACTED_LEDGER, 2L), t.probe.markDelete(ack), null);
        ack.future.get(COMPACTOR_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        System.out.printf("compaction ack durable after %d ms at %.3f mark-deletes/s (limiter period %d s)%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), NO_PERMIT_RATE,
                (long) (1 / NO_PERMIT_RATE));

        ManagedCursor recovered = t.crash();
        assertEquals(recovered.getProperties().get(COMPACTED_LEDGER), Long.valueOf(2),
                "the compaction ack was reported complete: a crash must recover the compacted ledger it named");
        assertFalse(ack.accepted.isDone(), "the compaction cursor's ack is written, not held by the limiter");
        assertEquals(t.probe.violations, List.of());
    }
    /**
     * "Reset wins": an ack accepted before a reset is ordered before it, so the reset's write holds it.
     * Checks our ordering rule (upstream completes the ack at once), hence fork-only.
     */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void aResetsWriteCompletesTheAcksAcceptedBeforeIt() throws Exception {
        Throttled t = new Throttled("throttled-reset", "c1", NO_PERMIT_RATE, Map.of());
        CallbackProbe.Outcome ack = t.probe.newOutcome("markDelete(p6)");
        CallbackProbe.Outcome reset = t.probe.newOutcome("reset(p0)");
        t.cursor.asyncMarkDelete(t.p.get(6), t.probe.markDelete(ack), null);
        assertFalse(ack.future.isDone());
        t.cursor.asyncResetCursor(t.p.get(0), false, t.probe.reset(reset));
        reset.future.get(10, TimeUnit.SECONDS);
        ack.future.get(10, TimeUnit.SECONDS);

        assertEquals(t.cursor.getAcceptedNotDurableCount(), 0);
        assertEquals(t.cursor.getReadPosition(), t.p.get(0));
        ManagedCursorImpl recovered = t.crash();
        assertEquals(recovered.getReadPosition(), t.p.get(0), "the reset is what a crash recovers");
        assertEquals(t.probe.violations, List.of());
    }

    /** A throttled ack while a read is in flight: the cursor's own write queues behind the read, then holds it. */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void anAcceptedAckBecomesDurableThroughAWriteQueuedBehindARead() throws Exception {
        Throttled t = new Throttled("throttled-read", "c1", NO_PERMIT_RATE, Map.of());
        CallbackProbe.Outcome ack = t.probe.newOutcome("delete(p3)");
        CompletableFuture<Void> read = holdOneRead(t.cursor);
        t.cursor.asyncDelete(t.p.get(3), t.probe.delete(ack), null);
        t.cursor.flush();
        await().atMost(WAIT).until(() -> queued(t.cursor) == 1);
        assertFalse(ack.future.isDone(), "its write waits for the read");
        read.complete(null);
        ack.future.get(10, TimeUnit.SECONDS);
        assertTrue(t.crash().isMessageDeleted(t.p.get(3)));
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * Held acks are bounded: at MAX_ACCEPTED_NOT_DURABLE the cursor writes at once. Prints the heap each
     * held ack costs (the caller's callback object aside), measured across full GCs.
     */
    @Test(groups = FORK_ONLY, timeOut = 120_000)
    public void heldAcksAreBoundedAndTheirFootprintIsMeasured() throws Exception {
        Throttled t = new Throttled("throttled-bound", "c1", NO_PERMIT_RATE, Map.of());
        AtomicInteger completed = new AtomicInteger();
        AsyncCallbacks.MarkDeleteCallback callback = new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                completed.incrementAndGet();
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
            }
        };
        int below = ManagedCursorImpl.MAX_ACCEPTED_NOT_DURABLE - 1;
        long before = usedHeapAfterGc();
        for (int i = 0; i < below; i++) {
            t.cursor.asyncMarkDelete(t.p.get(6), callback, null);
        }
        long after = usedHeapAfterGc();
        assertEquals(t.cursor.getAcceptedNotDurableCount(), below);
        System.out.printf("heap per held ack: %d bytes (%d acks held)%n", (after - before) / below, below);

        t.cursor.asyncMarkDelete(t.p.get(6), callback, null);
        await().atMost(WAIT).until(() -> completed.get() == below + 1);
        assertEquals(t.cursor.getAcceptedNotDurableCount(), 0);
        assertEquals(t.crash().getMarkDeletedPosition(), t.p.get(6));
    }

    private static long usedHeapAfterGc() {
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return memory.getHeapMemoryUsage().getUsed();
    }

    private static boolean dirty(ManagedCursorImpl cursor) throws Exception {
        Field f = ManagedCursorImpl.class.getDeclaredField("isDirty");
        f.setAccessible(true);
        return (boolean) f.get(cursor);
    }

    /** A non-durable cursor writes nothing: its throttled acks complete at once, as upstream's do. */
    @Test(timeOut = 60_000)
    public void nonDurableCursorCompletesThrottledAcksAtOnce() throws Exception {
        ManagedLedger ledger = factory.open("throttled-non-durable",
                new ManagedLedgerConfig().setThrottleMarkDelete(NO_PERMIT_RATE));
        ManagedCursorImpl durable = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, durable, 10);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.newNonDurableCursor(p.get(0));
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome first = probe.newOutcome("markDelete(p1)");
        CallbackProbe.Outcome second = probe.newOutcome("markDelete(p4)");
        CallbackProbe.Outcome delete = probe.newOutcome("delete(p7)");
        cursor.asyncMarkDelete(p.get(1), probe.markDelete(first), null);
        cursor.asyncMarkDelete(p.get(4), probe.markDelete(second), null);
        cursor.asyncDelete(p.get(7), probe.delete(delete), null);

        first.future.get(10, TimeUnit.SECONDS);
        second.future.get(10, TimeUnit.SECONDS);
        delete.future.get(10, TimeUnit.SECONDS);
        assertEquals(cursor.getMarkDeletedPosition(), p.get(4));
        assertTrue(cursor.isMessageDeleted(p.get(7)));
        assertFalse(second.accepted.isDone() || delete.accepted.isDone(), "no accepted-only state without writes");
        assertEquals(probe.violations, List.of());
    }

    /**
     * A steady stream of mark-deletes, 50 a second for 5 s, under a 4/s limiter: the cursor-ledger writes stay
     * within the limiter's permits (4 a second, plus the one second of permits a Guava limiter stores while idle),
     * and every ack completes. The write that makes the throttled acks durable takes a permit too: when an ack
     * took it, that ack's write holds the acks before it. Upstream writes only what the limiter permits (and
     * completes the rest without a write); both jars must pass.
     */
    @Test(timeOut = 60_000)
    public void aSteadyAckStreamIsWrittenAtTheLimiterRate() throws Exception {
        double rate = 4;
        int acks = 250;
        ManagedLedger ledger = factory.open("steady-ack-stream", new ManagedLedgerConfig().setThrottleMarkDelete(rate));
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, acks + 1);
        markDeleteTakingThePermit(cursor, p.get(0), Map.of());
        AtomicInteger completed = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AsyncCallbacks.MarkDeleteCallback callback = new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                completed.incrementAndGet();
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                failed.incrementAndGet();
            }
        };
        long writesBefore = cursor.getStats().getPersistLedgerSucceed();
        long start = System.nanoTime();
        ScheduledExecutorService acker = Executors.newSingleThreadScheduledExecutor();
        AtomicInteger next = new AtomicInteger(1);
        try {
            acker.scheduleAtFixedRate(() -> {
                int i = next.getAndIncrement();
                if (i <= acks) {
                    cursor.asyncMarkDelete(p.get(i), callback, null);
                }
            }, 0, 20, TimeUnit.MILLISECONDS);
            await().atMost(WAIT).until(() -> next.get() > acks);
        } finally {
            acker.shutdownNow();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        long writes = cursor.getStats().getPersistLedgerSucceed() - writesBefore;
        long bound = (long) Math.floor(rate * seconds) + (long) rate + 1;
        assertTrue(writes <= bound, writes + " cursor-ledger writes in " + seconds + " s at " + rate + "/s, more than "
                + bound);
        await().atMost(WAIT).until(() -> completed.get() + failed.get() == acks);
        assertEquals(failed.get(), 0);
        assertEquals(cursor.getMarkDeletedPosition(), p.get(acks));
    }
}
