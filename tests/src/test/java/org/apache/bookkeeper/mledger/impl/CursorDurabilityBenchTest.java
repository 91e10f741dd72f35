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
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.pulsarfork.bench.BenchGroups.onUpstream;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import com.google.common.util.concurrent.GatedRateLimiter;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.AddEntryGate;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * "Complete means durable" one step away from the reported scenarios: the six defects a review of the
 * patched cursor found, each pinned by the schedule that shows it. Entries p0..p9; a limiter
 * this slow never grants a second permit, so only a flush, a close or another write persists a
 * throttled ack.
 */
public class CursorDurabilityBenchTest extends CursorBenchBase {
    private static final double NO_PERMIT_RATE = 0.001;
    private ExecutorService ackers;

    @BeforeMethod(alwaysRun = true)
    public void startAckers() {
        ackers = Executors.newCachedThreadPool();
    }

    @AfterMethod(alwaysRun = true)
    public void stopAckers() {
        ackers.shutdownNow();
    }

    private final class Throttled {
        final String name;
        final ManagedCursorImpl cursor;
        final List<Position> p;
        final CallbackProbe probe;

        /** The limiter's one permit goes to markDelete(p[durable]), which is durable when this returns. */
        Throttled(String name, int durable) throws Exception {
            this.name = name;
            ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig().setThrottleMarkDelete(NO_PERMIT_RATE));
            this.cursor = (ManagedCursorImpl) ledger.openCursor("c1");
            this.p = openWithEntries(ledger, cursor, 10);
            markDeleteTakingThePermit(cursor, p.get(durable), Map.of());
            this.probe = new CallbackProbe(cursor);
        }

        Position beforeFirst() {
            return cursor.getManagedLedger().getPreviousPosition(p.get(0));
        }

        ManagedCursorImpl crash() throws Exception {
            return crashAndRecover(name, "c1");
        }
    }

    /**
     * Defect 1: a flush queues a write of p1 behind a read; a throttled markDelete(p6) then absorbs the
     * throttled delete(p5) into the mark-delete. The p1 write, which serializes neither p5 nor p6, must
     * not complete either of them; the next write does.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aHeldAckIsNotCompletedByAStaleWriteThatLacksIt() throws Exception {
        Throttled t = new Throttled("stale-write-holds-ack", 1);
        CallbackProbe.Outcome delete = t.probe.newOutcome("delete(p5)");
        CallbackProbe.Outcome md = t.probe.newOutcome("markDelete(p6)");
        CompletableFuture<Void> read = holdOneRead(t.cursor);
        t.cursor.asyncDelete(t.p.get(5), t.probe.delete(delete), null);
        t.cursor.flush();
        t.cursor.asyncMarkDelete(t.p.get(6), t.probe.markDelete(md), null);
        read.complete(null);
        await().atMost(WAIT).until(() -> queued(t.cursor) == 0 && writesInFlight(t.cursor) == 0);

        ManagedCursorImpl recovered = t.crash();
        if (delete.succeeded()) {
            assertTrue(recovered.isMessageDeleted(t.p.get(5)), "delete(p5) reported durable, lost in a crash");
        }
        if (md.succeeded()) {
            for (int i = 0; i <= 6; i++) {
                assertTrue(recovered.isMessageDeleted(t.p.get(i)), "markDelete(p6) reported durable, p" + i + " lost");
            }
        }
        t.cursor.flush();
        await().atMost(WAIT).until(() -> delete.future.isDone() && md.future.isDone());
        assertTrue(delete.succeeded() && md.succeeded());
        ManagedCursorImpl afterFlush = t.crash();
        for (int i = 0; i <= 6; i++) {
            assertTrue(afterFlush.isMessageDeleted(t.p.get(i)), "p" + i);
        }
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * Defect 2: delete(p7) is durable, then a reset to p0. The reset clears p7 in memory; its durable
     * record must too, or p7 is never redelivered after a crash.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aBackwardResetPersistsNoPreResetIndividualAck() throws Exception {
        Scenario s = new Scenario("reset-clears-individual-acks", false);
        s.cursor.delete(s.p.get(7));
        s.cursor.resetCursor(s.p.get(0));
        assertFalse(s.cursor.isMessageDeleted(s.p.get(7)), "the reset cleared p7 in memory");

        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getMarkDeletedPosition(), s.beforeFirst());
        assertFalse(recovered.isMessageDeleted(s.p.get(7)), "a crash brought back an ack the reset cleared");
    }

    /**
     * Defect 3: a throttled markDelete(p6) is applied, and the acking thread stops at the limiter's
     * decision while a reset to p0 runs. Whatever the ack records after that must not bring p6 back:
     * the close persists the reset.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aThrottledAckRacingAResetDoesNotRestoreThePreResetPosition() throws Exception {
        Throttled t = new Throttled("throttled-ack-races-reset", 1);
        GatedRateLimiter gate = installGatedLimiter(t.cursor, NO_PERMIT_RATE);
        CallbackProbe.Outcome md = t.probe.newOutcome("markDelete(p6)");
        CallbackProbe.Outcome reset = t.probe.newOutcome("reset(p0)");
        ackers.execute(() -> t.cursor.asyncMarkDelete(t.p.get(6), t.probe.markDelete(md), null));
        gate.entered.get(10, TimeUnit.SECONDS);
        ackers.execute(() -> t.cursor.asyncResetCursor(t.p.get(0), false, t.probe.reset(reset)));
        if (cursorLock(t.cursor).isWriteLocked()) {
            // The ack decides under the cursor lock: the reset's write waits for it to finish.
            await().atMost(WAIT).until(() -> writesInFlight(t.cursor) == 1);
        } else {
            await().atMost(WAIT).until(reset.future::isDone);
        }
        gate.release.complete(null);
        await().atMost(WAIT).until(() -> reset.future.isDone() && (md.accepted.isDone() || md.future.isDone()));
        assertTrue(reset.succeeded());
        assertEquals(t.cursor.getMarkDeletedPosition(), t.beforeFirst(), "the ack was applied before the reset");

        t.cursor.close();
        assertEquals(t.crash().getMarkDeletedPosition(), t.beforeFirst(), "a restart undid the reset");
        await().atMost(WAIT).until(md.future::isDone);
        assertEquals(md.calls.get(), 1);
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * Defect 4: a throttled ack is reported accepted while the cursor closes. Close must not leave it
     * without a callback.
     */
    @Test(timeOut = 60_000)
    public void aThrottledAckRacingCloseIsCalledBackOnce() throws Exception {
        Throttled t = new Throttled("throttled-ack-races-close", 1);
        CallbackProbe.Outcome md = t.probe.newOutcome("markDelete(p6)");
        CompletableFuture<Void> inAccepted = new CompletableFuture<>();
        CompletableFuture<Void> leaveAccepted = new CompletableFuture<>();
        AsyncCallbacks.MarkDeleteCallback probe = t.probe.markDelete(md);
        AsyncCallbacks.MarkDeleteCallback stopsInAccepted = new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                probe.markDeleteComplete(ctx);
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                probe.markDeleteFailed(exception, ctx);
            }

            @Override
            public void markDeleteAccepted(Object ctx) {
                probe.markDeleteAccepted(ctx);
                inAccepted.complete(null);
                leaveAccepted.join();
            }
        };
        ackers.execute(() -> t.cursor.asyncMarkDelete(t.p.get(6), stopsInAccepted, null));
        await().atMost(WAIT).until(() -> inAccepted.isDone() || md.future.isDone());
        t.cursor.close();
        leaveAccepted.complete(null);

        await().atMost(WAIT).until(md.future::isDone);
        assertEquals(md.calls.get(), 1);
        if (!onUpstream()) {
            assertEquals(t.cursor.getAcceptedNotDurableCount(), 0);
        }
        if (md.succeeded()) {
            assertEquals(t.crash().getMarkDeletedPosition(), t.p.get(6), "reported durable");
        }
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * Defect 5: a throttled delete(p5) is applied while the reset's write (to p0) is in flight. The reset
     * supersedes it; it must still complete, not wait for a write above the reset position forever.
     */
    @Test(timeOut = 60_000)
    public void aThrottledAckAppliedWhileAResetIsWrittenIsNotOrphaned() throws Exception {
        Throttled t = new Throttled("throttled-ack-during-reset-write", 4);
        CallbackProbe.Outcome delete = t.probe.newOutcome("delete(p5)");
        CallbackProbe.Outcome reset = t.probe.newOutcome("reset(p0)");
        CompletableFuture<Void> resetWrite = AddEntryGate.holdNextAdd(bkc);
        t.cursor.asyncResetCursor(t.p.get(0), false, t.probe.reset(reset));
        await().atMost(WAIT).until(() -> writesInFlight(t.cursor) == 1);
        t.cursor.asyncDelete(t.p.get(5), t.probe.delete(delete), null);
        resetWrite.complete(null);
        await().atMost(WAIT).until(reset.future::isDone);
        assertTrue(reset.succeeded());
        t.cursor.flush();

        await().atMost(WAIT).until(delete.future::isDone);
        assertEquals(delete.calls.get(), 1);
        if (!onUpstream()) {
            assertEquals(t.cursor.getAcceptedNotDurableCount(), 0);
        }
        ManagedCursorImpl recovered = t.crash();
        assertEquals(recovered.getMarkDeletedPosition(), t.beforeFirst());
        assertFalse(recovered.isMessageDeleted(t.p.get(5)), "the reset wins over the ack applied before it");
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * Defect 6: the ack write ahead of a queued reset fails at the bookie and falls back to the metadata
     * store. The reset must go to a new cursor ledger, not fail because the cursor has none now. Upstream
     * writes the reset at once and it succeeds, but the ack's metadata-store fallback, written after it,
     * records the pre-reset position: a crash undoes the reset.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aQueuedResetSurvivesATransientCursorLedgerWriteFailure() throws Exception {
        Scenario s = new Scenario("reset-after-write-failure", false);
        CompletableFuture<Void> ackWrite = AddEntryGate.holdNextAdd(bkc);
        s.cursor.asyncDelete(s.p.get(7), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(() -> writesInFlight(s.cursor) == 1);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1 || s.reset.future.isDone());
        ackWrite.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));

        await().atMost(WAIT).until(() -> s.reset.future.isDone() && s.ack.future.isDone());
        assertTrue(s.reset.succeeded(), "a transient bookie error must not fail the reset");
        assertEquals(s.cursor.getMarkDeletedPosition(), s.beforeFirst());
        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getMarkDeletedPosition(), s.beforeFirst());
        assertFalse(recovered.isMessageDeleted(s.p.get(7)));
        assertEquals(s.probe.violations, List.of());
    }

    /** Review finding: an empty individual ack acknowledges nothing; it must not wedge the cursor's writes. */
    @Test(timeOut = 60_000)
    public void anEmptyIndividualAckCompletesAndLeavesTheCursorWritable() throws Exception {
        Scenario s = new Scenario("empty-individual-ack", false);
        s.cursor.delete(s.p.get(7));
        s.cursor.asyncDelete(List.of(), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(s.ack.future::isDone);
        assertTrue(s.ack.succeeded());
        s.cursor.markDelete(s.p.get(5));
        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getMarkDeletedPosition(), s.p.get(5));
        assertTrue(recovered.isMessageDeleted(s.p.get(7)));
        assertEquals(s.probe.violations, List.of());
    }

    /**
     * Review finding: delete(p3) arrives when a throttled markDelete(p5), not yet durable, already covers
     * p3 in memory. Reporting it done at once, with nothing written, loses it in a crash.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void anAckOfAPositionDeletedOnlyInMemoryIsCompleteOnlyOnceDurable() throws Exception {
        Throttled t = new Throttled("ack-of-a-non-durable-deletion", 1);
        CallbackProbe.Outcome md = t.probe.newOutcome("markDelete(p5)");
        CallbackProbe.Outcome delete = t.probe.newOutcome("delete(p3)");
        t.cursor.asyncMarkDelete(t.p.get(5), t.probe.markDelete(md), null);
        t.cursor.asyncDelete(t.p.get(3), t.probe.delete(delete), null);

        ManagedCursorImpl recovered = t.crash();
        if (delete.succeeded()) {
            assertTrue(recovered.isMessageDeleted(t.p.get(3)), "delete(p3) reported durable, lost in a crash");
        }
        t.cursor.flush();
        await().atMost(WAIT).until(() -> delete.future.isDone() && md.future.isDone());
        assertTrue(delete.succeeded() && md.succeeded());
        assertEquals(t.crash().getMarkDeletedPosition(), t.p.get(5));
        assertEquals(t.probe.violations, List.of());
    }

    /**
     * Found by the schedule explorer: a partial batch-index ack, then a clean close. The close records the
     * batch indexes in the cursor's metadata-store record; the reopened cursor must still have them.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aClosedCursorKeepsItsPartialBatchAcks() throws Exception {
        Scenario s = new Scenario("closed-cursor-keeps-batch-acks", false);
        Position p6 = s.p.get(6);
        long[] unacked = {0b100};
        s.cursor.asyncDelete(AckSetStateUtil.createPositionWithAckSet(p6.getLedgerId(), p6.getEntryId(), unacked),
                s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(s.ack.future::isDone);
        assertTrue(s.ack.succeeded());
        s.cursor.close();

        long[] recovered = s.crash().getDeletedBatchIndexesAsLongArray(p6);
        assertEquals(recovered, unacked, "a batch ack reported complete, lost at the next load");
        assertEquals(s.probe.violations, List.of());
    }

    /**
     * Found by the schedule explorer: a reset refused because another is in progress was called back under the
     * queue monitor.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aResetRefusedWhileAnotherIsInProgressIsCalledBackOffTheMonitor() throws Exception {
        Scenario s = new Scenario("reset-refused-in-progress", false);
        CompletableFuture<Void> resetWrite = AddEntryGate.holdNextAdd(bkc);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        await().atMost(WAIT).until(() -> writesInFlight(s.cursor) == 1);
        CallbackProbe.Outcome second = s.probe.newOutcome("reset(p2)");
        s.cursor.asyncResetCursor(s.p.get(2), false, s.probe.reset(second));
        await().atMost(WAIT).until(second.future::isDone);
        assertFalse(second.succeeded(), "another reset is in progress");
        resetWrite.complete(null);

        await().atMost(WAIT).until(s.reset.future::isDone);
        assertTrue(s.reset.succeeded());
        assertEquals(s.probe.violations, List.of());
    }

    /**
     * Found by the schedule explorer (4.0.8, seed 1949): after a write fell back to the metadata store, the
     * next write creates a cursor ledger. When its first record fails at the bookies, upstream falls back to
     * the metadata store again and then names the empty ledger there, with no acks (the ledger holds them);
     * recovery rolls an empty cursor ledger back to that record's position: the acks made durable before are
     * lost.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aNewCursorLedgerWhoseFirstRecordFailedIsNotSwitchedTo() throws Exception {
        Scenario s = new Scenario("new-ledger-first-record-failed", false);
        s.cursor.delete(s.p.get(6));
        CompletableFuture<Void> failedWrite = AddEntryGate.holdNextAdd(bkc);
        CallbackProbe.Outcome fallback = s.probe.newOutcome("delete(p7)");
        s.cursor.asyncDelete(s.p.get(7), s.probe.delete(fallback), null);
        failedWrite.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));
        await().atMost(WAIT).until(fallback.future::isDone);
        assertTrue(fallback.succeeded(), "written to the metadata store");

        CompletableFuture<Void> firstRecord = AddEntryGate.holdNextAdd(bkc);
        CompletableFuture<Void> nextWrite = AddEntryGate.holdAdd(bkc, 1);
        s.cursor.asyncDelete(s.p.get(8), s.probe.delete(s.ack), null);
        firstRecord.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));
        // Upstream switches to the new ledger and writes delete(p8) into it: held here, as a crash would find it.
        await().atMost(WAIT).until(() -> s.ack.future.isDone() || nextWrite.isDone()
                || writesInFlight(s.cursor) == 1);
        if (s.ack.future.isDone()) {
            // No cursor ledger took the write: the gate would hold an unrelated add.
            nextWrite.complete(null);
        }

        ManagedCursorImpl recovered = s.crash();
        assertTrue(recovered.isMessageDeleted(s.p.get(6)), "delete(p6) reported durable, lost in a crash");
        assertTrue(recovered.isMessageDeleted(s.p.get(7)), "delete(p7) reported durable, lost in a crash");
        nextWrite.complete(null);
        await().atMost(WAIT).until(s.ack.future::isDone);
        assertEquals(s.probe.violations, List.of());
    }
}
