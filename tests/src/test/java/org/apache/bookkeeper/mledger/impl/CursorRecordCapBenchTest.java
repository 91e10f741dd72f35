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
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.apache.bookkeeper.client.AddEntryGate;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * A cursor record keeps at most {@code maxUnackedRangesToPersist} individually deleted ranges and
 * {@code maxBatchDeletedIndexToPersist} entries with batch-index acks (apache/pulsar #25540). An ack the
 * record being written cannot hold must not be reported durable by that write. Entries p0..p24; the
 * holes are the odd positions, each its own range.
 */
public class CursorRecordCapBenchTest extends CursorBenchBase {
    private static final int RANGE_CAP = 5;
    private static final int BATCH_CAP = 2;
    private static final int ENTRIES = 25;
    private static final int HOLES = 10;

    private int batchCap = BATCH_CAP;

    @BeforeMethod(alwaysRun = true)
    public void defaultCaps() {
        batchCap = BATCH_CAP;
    }

    @Override
    protected ManagedLedgerConfig config() {
        ManagedLedgerConfig config = new ManagedLedgerConfig();
        config.setMaxUnackedRangesToPersist(RANGE_CAP);
        config.setMaxBatchDeletedIndexToPersist(batchCap);
        config.setDeletionAtBatchIndexLevelEnabled(true);
        return config;
    }

    private final class Holes {
        final String name;
        final ManagedCursorImpl cursor;
        final List<Position> p;
        final CallbackProbe probe;
        final List<CallbackProbe.Outcome> deletes = new ArrayList<>();

        Holes(String topic) throws Exception {
            // A topic's persistence name: 5.0 names the metric attributes of a truncated record after it.
            this.name = "public/default/persistent/" + topic;
            ManagedLedger ledger = factory.open(name, config());
            this.cursor = (ManagedCursorImpl) ledger.openCursor("c1");
            this.p = openWithEntries(ledger, cursor, ENTRIES);
            this.probe = new CallbackProbe(cursor);
        }

        /** Acks the odd positions one by one, each written before the next (no limiter). */
        void ackHoles() throws Exception {
            for (int i = 0; i < HOLES; i++) {
                ackHole(i);
            }
        }

        /** The same from the highest hole down: each ack adds a range below those of the records before it. */
        void ackHolesFromTheTop() throws Exception {
            for (int i = HOLES - 1; i >= 0; i--) {
                ackHole(i);
            }
        }

        private void ackHole(int i) {
            Position hole = p.get(hole(i));
            CallbackProbe.Outcome delete = probe.newOutcome("delete(p" + hole(i) + ")");
            deletes.add(delete);
            cursor.asyncDelete(hole, probe.delete(delete), null);
            await().atMost(WAIT).until(() -> queued(cursor) == 0 && writesInFlight(cursor) == 0);
        }

        /** Acks batch index 0 of entries p1, p3, ... p(2n-1): each entry keeps its other indexes. */
        void ackBatchIndexes(int n) throws Exception {
            for (int i = 0; i < n; i++) {
                ackBatchIndex(i);
            }
        }

        /** The same from p(2n-1) down. */
        void ackBatchIndexesFromTheTop(int n) throws Exception {
            for (int i = n - 1; i >= 0; i--) {
                ackBatchIndex(i);
            }
        }

        private void ackBatchIndex(int i) {
            Position entry = p.get(hole(i));
            BitSet unacked = new BitSet();
            unacked.set(1, 10);
            Position partial = AckSetStateUtil.createPositionWithAckSet(entry.getLedgerId(), entry.getEntryId(),
                    unacked.toLongArray());
            CallbackProbe.Outcome delete = probe.newOutcome("delete(p" + hole(i) + ", index 0)");
            deletes.add(delete);
            cursor.asyncDelete(partial, probe.delete(delete), null);
            await().atMost(WAIT).until(() -> queued(cursor) == 0 && writesInFlight(cursor) == 0);
        }

        ManagedCursorImpl crash() throws Exception {
            return crashAndRecover(name, "c1");
        }

        int hole(int i) {
            return 2 * i + 1;
        }
    }

    /**
     * Ten holes acked one by one with a cap of five ranges: every delete reported complete must be deleted
     * after a crash. Upstream reports all ten complete and loses those past the cap.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aDeletePastTheRangeCapIsNotReportedDurable() throws Exception {
        Holes h = new Holes("range-cap-durable");
        h.ackHoles();
        assertTrue(succeeded(h) >= RANGE_CAP, "the deletes within the cap complete");
        ManagedCursorImpl recovered = h.crash();
        for (int i = 0; i < HOLES; i++) {
            if (h.deletes.get(i).succeeded()) {
                assertTrue(recovered.isMessageDeleted(h.p.get(h.hole(i))),
                        h.deletes.get(i).name + " reported durable, not deleted after a crash");
            }
        }
        assertEquals(h.probe.violations, List.of());
    }

    /**
     * Ten holes acked from the highest down with a cap of five ranges: the first deletes complete with records
     * that hold them, then each ack adds a range below them. A record filled lowest first would drop a range a
     * record before it held and completed: every delete reported complete must be deleted after a crash. The
     * deletes past the cap wait for the holes below them, as above. Upstream keeps the lowest ranges and loses
     * the highest, which it reported complete first.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aDeleteARecordHeldIsNotPushedPastTheRangeCapByLowerOnes() throws Exception {
        Holes h = new Holes("range-cap-pushed");
        h.ackHolesFromTheTop();
        assertTrue(succeeded(h) >= RANGE_CAP, "the deletes within the cap complete");
        ManagedCursorImpl recovered = h.crash();
        for (int i = 0; i < HOLES; i++) {
            CallbackProbe.Outcome delete = h.deletes.get(i);
            if (delete.succeeded()) {
                assertTrue(recovered.isMessageDeleted(h.p.get(h.hole(HOLES - 1 - i))),
                        delete.name + " reported durable, lost in a crash");
            }
        }
        assertEquals(h.probe.violations, List.of());
    }

    /**
     * The five highest holes acked from the top complete within the cap; after a restart, the five below them
     * are acked at once on the recovered cursor. Its first record must keep the ranges the recovered record
     * held: after a second crash p11 to p19 are still deleted. Upstream keeps the lowest ranges and drops them.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aDeleteARecordHeldBeforeARestartIsNotPushedPastTheCapAfterIt() throws Exception {
        Holes h = new Holes("range-cap-restart");
        for (int i = HOLES - 1; i >= HOLES - RANGE_CAP; i--) {
            h.ackHole(i);
        }
        for (CallbackProbe.Outcome delete : h.deletes) {
            assertTrue(delete.succeeded(), delete.name + " is within the cap");
        }
        ManagedCursorImpl restarted = h.crash();
        CallbackProbe afterRestart = new CallbackProbe(restarted);
        // In one ack, so that the first record after the restart is the one cut.
        List<Position> lower = new ArrayList<>();
        for (int i = 0; i < HOLES - RANGE_CAP; i++) {
            lower.add(h.p.get(h.hole(i)));
        }
        restarted.asyncDelete(lower, afterRestart.delete(afterRestart.newOutcome("delete(" + lower + ")")), null);
        await().atMost(WAIT).until(() -> queued(restarted) == 0 && writesInFlight(restarted) == 0);
        ManagedCursorImpl recovered = h.crash();
        for (int i = HOLES - RANGE_CAP; i < HOLES; i++) {
            assertTrue(recovered.isMessageDeleted(h.p.get(h.hole(i))),
                    "delete(p" + h.hole(i) + ") reported durable before the restart, lost after it");
        }
        assertEquals(h.probe.violations, List.of());
        assertEquals(afterRestart.violations, List.of());
    }

    /**
     * With p0 never acknowledged, entries p1, p3, ... p19 are acknowledged in part and then whole, one after
     * the other. A record keeps an entry acknowledged whole as the range that holds it when the record before
     * held its batch-index acks; its ranges and entries together stay within both caps together, and every
     * ack reported complete survives a crash.
     */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void entriesAcknowledgedWholeKeepARecordWithinBothCaps() throws Exception {
        Holes h = new Holes("caps-together");
        for (int i = 0; i < HOLES; i++) {
            h.ackBatchIndex(i);
            h.ackHole(i);
            ManagedCursorImpl recovered = h.crash();
            int items = recovered.getIndividuallyDeletedMessagesSet().size() + batchEntries(recovered, h);
            // 4.x keeps one range past the range cap.
            assertTrue(items <= RANGE_CAP + 1 + BATCH_CAP, "a record of " + items + " ranges and entries");
            for (int k = 0; k < h.deletes.size(); k++) {
                CallbackProbe.Outcome delete = h.deletes.get(k);
                Position entry = h.p.get(h.hole(k / 2));
                if (delete.succeeded()) {
                    assertTrue(k % 2 == 0 ? recovered.isMessageDeleted(entry)
                                    || recovered.getDeletedBatchIndexesAsLongArray(entry) != null
                                    : recovered.isMessageDeleted(entry),
                            delete.name + " reported durable, lost in a crash");
                }
            }
        }
        assertEquals(h.probe.violations, List.of());
    }

    private static int batchEntries(ManagedCursorImpl cursor, Holes h) {
        int n = 0;
        for (Position p : h.p) {
            n += cursor.getDeletedBatchIndexesAsLongArray(p) != null ? 1 : 0;
        }
        return n;
    }

    /**
     * The deletes past the cap wait, and ask for no write while they do; once the holes below them close,
     * the record holds them and they complete.
     */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void aDeletePastTheRangeCapCompletesWhenTheHolesBelowItClose() throws Exception {
        Holes h = new Holes("range-cap-completes");
        h.ackHoles();
        int waiting = 0;
        for (CallbackProbe.Outcome delete : h.deletes) {
            waiting += delete.future.isDone() ? 0 : 1;
        }
        assertTrue(waiting > 0, "some deletes are past the cap of " + RANGE_CAP);
        assertEquals(h.cursor.getAcksPastRecordCapCount(), waiting);
        assertFalse(acceptedWriteScheduled(h.cursor), "a write for acks no record can hold would repeat forever");

        h.cursor.markDelete(h.p.get(2 * HOLES - 2));
        await().atMost(WAIT).until(() -> h.deletes.stream().allMatch(d -> d.future.isDone()));
        for (CallbackProbe.Outcome delete : h.deletes) {
            assertTrue(delete.succeeded(), delete.name);
        }
        assertEquals(h.cursor.getAcksPastRecordCapCount(), 0);
        ManagedCursorImpl recovered = h.crash();
        for (int i = 0; i < HOLES; i++) {
            assertTrue(recovered.isMessageDeleted(h.p.get(h.hole(i))), "p" + h.hole(i));
        }
        assertEquals(h.probe.violations, List.of());
    }

    /** A close whose record cannot hold a delete fails it, saying why; every callback fires once. */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void aCloseFailsTheDeletesPastTheCapSayingWhy() throws Exception {
        Holes h = new Holes("range-cap-close");
        h.ackHoles();
        h.cursor.close();
        await().atMost(WAIT).until(() -> h.deletes.stream().allMatch(d -> d.future.isDone()));
        ManagedCursorImpl recovered = h.crash();
        int failed = 0;
        for (int i = 0; i < HOLES; i++) {
            CallbackProbe.Outcome delete = h.deletes.get(i);
            if (delete.succeeded()) {
                assertTrue(recovered.isMessageDeleted(h.p.get(h.hole(i))), delete.name + " lost");
            } else {
                failed++;
                ExecutionException e = expectThrows(delete);
                assertTrue(e.getCause() instanceof ManagedLedgerException.CursorAlreadyClosedException, delete.name);
                assertTrue(e.getCause().getMessage().contains("managedLedgerMaxUnackedRangesToPersist"),
                        e.getCause().getMessage());
            }
        }
        assertTrue(failed > 0, "the close's record holds " + RANGE_CAP + " ranges of " + HOLES);
        assertEquals(h.probe.violations, List.of());
    }

    /**
     * Partial batch-index acks on four entries with a cap of two entries: every one reported complete must
     * be in the recovered batch indexes.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aBatchIndexAckPastTheCapIsNotReportedDurable() throws Exception {
        Holes h = new Holes("batch-cap-durable");
        h.ackBatchIndexes(4);
        assertTrue(succeeded(h) >= BATCH_CAP, "the batch-index acks within the cap complete");
        ManagedCursorImpl recovered = h.crash();
        for (int i = 0; i < 4; i++) {
            if (h.deletes.get(i).succeeded()) {
                long[] kept = recovered.getDeletedBatchIndexesAsLongArray(h.p.get(h.hole(i)));
                assertNotNull(kept, h.deletes.get(i).name + " reported durable, lost in a crash");
                assertFalse(BitSet.valueOf(kept).get(0), h.deletes.get(i).name + " reported durable, index 0 back");
            }
        }
        assertEquals(h.probe.violations, List.of());
    }

    /**
     * Partial batch-index acks on p7, p5, p3, p1 in that order with a cap of two entries: p7's and p5's
     * complete with records that hold them; a record filled lowest first would then hold p3 and p5 and drop
     * p7's. Every one reported complete must be in the recovered batch indexes. Upstream loses p7's.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aBatchIndexAckARecordHeldIsNotPushedPastTheCapByLowerOnes() throws Exception {
        Holes h = new Holes("batch-cap-pushed");
        h.ackBatchIndexesFromTheTop(4);
        assertTrue(succeeded(h) >= BATCH_CAP, "the batch-index acks within the cap complete");
        ManagedCursorImpl recovered = h.crash();
        for (int i = 0; i < 4; i++) {
            CallbackProbe.Outcome delete = h.deletes.get(i);
            if (delete.succeeded()) {
                long[] kept = recovered.getDeletedBatchIndexesAsLongArray(h.p.get(h.hole(3 - i)));
                assertNotNull(kept, delete.name + " reported durable, lost in a crash");
                assertFalse(BitSet.valueOf(kept).get(0), delete.name + " reported durable, index 0 back");
            }
        }
        assertEquals(h.probe.violations, List.of());
    }

    /**
     * The batch-index acks past the cap wait; once the entries below them are acknowledged whole, the
     * record holds them and they complete.
     */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void aBatchIndexAckPastTheCapCompletesWhenTheEntriesBelowItAreAcked() throws Exception {
        Holes h = new Holes("batch-cap-completes");
        h.ackBatchIndexes(4);
        assertEquals(h.cursor.getAcksPastRecordCapCount(), 4 - BATCH_CAP);
        for (int i = 0; i < BATCH_CAP; i++) {
            h.cursor.delete(h.p.get(h.hole(i)));
        }
        await().atMost(WAIT).until(() -> h.deletes.stream().allMatch(d -> d.future.isDone()));
        for (CallbackProbe.Outcome delete : h.deletes) {
            assertTrue(delete.succeeded(), delete.name);
        }
        assertEquals(h.cursor.getAcksPastRecordCapCount(), 0);
        ManagedCursorImpl recovered = h.crash();
        for (int i = BATCH_CAP; i < 4; i++) {
            long[] kept = recovered.getDeletedBatchIndexesAsLongArray(h.p.get(h.hole(i)));
            assertNotNull(kept, "p" + h.hole(i));
            assertFalse(BitSet.valueOf(kept).get(0), "p" + h.hole(i) + " index 0");
        }
        assertEquals(h.probe.violations, List.of());
    }

    /**
     * Batch-index entries at or below the mark-delete position stay in memory until a durable write clears
     * them, and count against the cap. delete(p5), written while markDelete(p3)'s write is in flight, is in
     * its record's ranges: the stale entries p1 and p3, one past a cap of one, must not hold it back.
     */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void aDeleteIsNotHeldBackByStaleBatchIndexEntries() throws Exception {
        batchCap = 1;
        Holes h = new Holes("batch-cap-stale");
        h.ackBatchIndexes(2);
        CompletableFuture<Void> markDeleteWrite = AddEntryGate.holdNextAdd(bkc);
        CallbackProbe.Outcome md = h.probe.newOutcome("markDelete(p3)");
        CallbackProbe.Outcome delete = h.probe.newOutcome("delete(p5)");
        h.cursor.asyncMarkDelete(h.p.get(3), h.probe.markDelete(md), null);
        await().atMost(WAIT).until(() -> writesInFlight(h.cursor) == 1 || md.future.isDone());
        assertFalse(md.future.isDone(), describe(md) + ", past the caps " + h.cursor.getAcksPastRecordCapCount());
        h.cursor.asyncDelete(h.p.get(5), h.probe.delete(delete), null);
        markDeleteWrite.complete(null);
        // No crash check: the mock assigns entry ids when a held add is released, so it would recover the
        // markDelete(p3) record as the last one, which a real ledger (ids in order of submission) does not.
        await(md.name).atMost(WAIT).until(md.future::isDone);
        await(delete.name + ", past the caps: " + h.cursor.getAcksPastRecordCapCount()).atMost(WAIT)
                .until(delete.future::isDone);
        assertTrue(md.succeeded(), describe(md));
        assertTrue(delete.succeeded(), describe(delete));
        assertEquals(h.probe.violations, List.of());
    }

    private static String describe(CallbackProbe.Outcome outcome) {
        if (!outcome.future.isDone()) {
            return outcome.name + ": pending";
        }
        return outcome.name + ": " + (outcome.succeeded() ? "succeeded" : expectThrows(outcome).getCause());
    }

    private static long succeeded(Holes h) {
        return h.deletes.stream().filter(CallbackProbe.Outcome::succeeded).count();
    }

    private static ExecutionException expectThrows(CallbackProbe.Outcome outcome) {
        try {
            outcome.future.get();
        } catch (ExecutionException e) {
            return e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        throw new AssertionError(outcome.name + " succeeded");
    }

    private static boolean acceptedWriteScheduled(ManagedCursorImpl cursor) throws Exception {
        Field f = ManagedCursorImpl.class.getDeclaredField("acceptedWriteScheduled");
        f.setAccessible(true);
        return (boolean) f.get(cursor);
    }
}
