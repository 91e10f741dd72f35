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
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.MockBookKeeperAddGate;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * What a cursor record holds, one step away from the reset and throttling fixes: a reset's record holds
 * no ack it cleared, a write completes only the acks it contains, a queued reset survives a transient
 * write failure, a cursor ledger whose first record failed is not switched to, and an ack past the
 * record's range cap waits for a record that holds it. Each test checks that a restart after a crash
 * recovers what was reported complete.
 */
public class ManagedCursorRecordTest extends ManagedCursorAckPathTestBase {
    private static final ManagedLedgerConfig CONFIG = new ManagedLedgerConfig();
    private static final ManagedLedgerConfig THROTTLED = new ManagedLedgerConfig().setThrottleMarkDelete(0.001);

    /** Entries p0..p9, cursor c1, its mark-delete position at p[markDeleted], durable. */
    private final class Cursor {
        final String name;
        final ManagedLedgerConfig config;
        final ManagedCursorImpl cursor;
        final List<Position> p;

        Cursor(String name, ManagedLedgerConfig config, int markDeleted) throws Exception {
            this.name = name;
            this.config = config;
            ManagedLedger ledger = factory.open(name, config);
            this.cursor = (ManagedCursorImpl) ledger.openCursor("c1");
            this.p = addEntries(ledger, cursor, 10);
            cursor.markDelete(p.get(markDeleted));
        }

        Position beforeFirst() {
            return cursor.getManagedLedger().getPreviousPosition(p.get(0));
        }

        ManagedCursorImpl crash() throws Exception {
            return crashAndRecover(name, "c1", config);
        }
    }

    /** delete(p7) is durable, then a reset to p0 clears it in memory: its record must not bring p7 back. */
    @Test(timeOut = 60_000)
    public void testBackwardResetPersistsNoPreResetIndividualAck() throws Exception {
        Cursor c = new Cursor("reset-clears-acks", CONFIG, 4);
        c.cursor.delete(c.p.get(7));
        c.cursor.resetCursor(c.p.get(0));
        assertFalse(c.cursor.isMessageDeleted(c.p.get(7)), "the reset cleared p7 in memory");

        ManagedCursorImpl recovered = c.crash();
        assertEquals(recovered.getMarkDeletedPosition(), c.beforeFirst());
        assertFalse(recovered.isMessageDeleted(c.p.get(7)), "a restart brought back an ack the reset cleared");
    }

    /**
     * A flush queues a write of p1 behind a read; a throttled markDelete(p6) then absorbs the throttled
     * delete(p5). The queued p1 write serializes neither: it must not complete them. Whatever write does
     * complete delete(p5) (without the fix: the p1 write; with it, the cursor's next write) must have made
     * it durable, which a crash right then shows.
     */
    @Test(timeOut = 60_000)
    public void testHeldAckIsNotCompletedByAStaleWriteThatLacksIt() throws Exception {
        Cursor c = new Cursor("stale-write", THROTTLED, 1);
        Recorded delete = new Recorded(c.cursor);
        Recorded markDelete = new Recorded(c.cursor);
        CompletableFuture<Void> read = holdOneRead(c.cursor);
        c.cursor.asyncDelete(c.p.get(5), delete, null);
        c.cursor.flush();
        c.cursor.asyncMarkDelete(c.p.get(6), markDelete, null);
        read.complete(null);
        await().atMost(WAIT).until(delete.done::isDone);
        assertTrue(delete.succeeded());

        ManagedCursorImpl recovered = c.crash();
        assertTrue(recovered.isMessageDeleted(c.p.get(5)), "delete(p5) reported complete, lost in a crash");
        if (markDelete.succeeded()) {
            assertDeletedUpTo(recovered, c.p, 6, "markDelete(p6) reported complete, lost in a crash");
        }
        c.cursor.flush();
        await().atMost(WAIT).until(markDelete.done::isDone);
        assertTrue(markDelete.succeeded());
        assertDeletedUpTo(c.crash(), c.p, 6, "markDelete(p6) reported complete, lost in a crash");
        assertEquals(delete.calls.get() + markDelete.calls.get(), 2);
        assertEquals(delete.violations, List.of());
    }

    /**
     * p0..p[last] are deleted: by the mark-delete position or by the individual ranges of the record (a
     * record of an older position carries the acks its mark-delete absorbed as ranges).
     */
    private static void assertDeletedUpTo(ManagedCursorImpl cursor, List<Position> p, int last, String what) {
        for (int i = 0; i <= last; i++) {
            assertTrue(cursor.isMessageDeleted(p.get(i)), what + ": p" + i + " is not deleted");
        }
    }

    /** A reset queued behind an ack whose cursor-ledger write fails goes to a new cursor ledger. */
    @Test(timeOut = 60_000)
    public void testQueuedResetSurvivesATransientCursorLedgerWriteFailure() throws Exception {
        Cursor c = new Cursor("reset-after-failed-write", CONFIG, 4);
        Recorded ack = new Recorded(c.cursor);
        Recorded reset = new Recorded(c.cursor);
        CompletableFuture<Void> ackWrite = MockBookKeeperAddGate.holdAdd(bkc, 0);
        c.cursor.asyncDelete(c.p.get(7), ack, null);
        await().atMost(WAIT).until(() -> writesInFlight(c.cursor) == 1);
        c.cursor.asyncResetCursor(c.p.get(0), false, reset);
        await().atMost(WAIT).until(() -> queued(c.cursor) == 1);
        ackWrite.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));

        await().atMost(WAIT).until(() -> reset.done.isDone() && ack.done.isDone());
        assertTrue(reset.succeeded(), "a transient bookie error must not fail the reset");
        ManagedCursorImpl recovered = c.crash();
        assertEquals(recovered.getMarkDeletedPosition(), c.beforeFirst());
        assertFalse(recovered.isMessageDeleted(c.p.get(7)));
        assertEquals(reset.violations, List.of());
    }

    /**
     * After a write fell back to the metadata store, the next write creates a cursor ledger. Its first
     * record fails: naming that empty ledger in the metadata store would roll recovery back past the acks
     * made durable before.
     */
    @Test(timeOut = 60_000)
    public void testNewCursorLedgerWhoseFirstRecordFailedIsNotSwitchedTo() throws Exception {
        Cursor c = new Cursor("first-record-failed", CONFIG, 4);
        c.cursor.delete(c.p.get(6));
        CompletableFuture<Void> failedWrite = MockBookKeeperAddGate.holdAdd(bkc, 0);
        Recorded fallback = new Recorded(c.cursor);
        c.cursor.asyncDelete(c.p.get(7), fallback, null);
        failedWrite.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));
        await().atMost(WAIT).until(fallback.done::isDone);
        assertTrue(fallback.succeeded(), "written to the metadata store");

        CompletableFuture<Void> firstRecord = MockBookKeeperAddGate.holdAdd(bkc, 0);
        CompletableFuture<Void> nextWrite = MockBookKeeperAddGate.holdAdd(bkc, 1);
        Recorded ack = new Recorded(c.cursor);
        c.cursor.asyncDelete(c.p.get(8), ack, null);
        firstRecord.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));
        // Without the fix the cursor switches to the new ledger and writes delete(p8) into it, held by the gate
        // as a crash would find it; with it, the creation fails and delete(p8) completes in the metadata store.
        await().atMost(WAIT).until(() -> ack.done.isDone() || writesInFlight(c.cursor) == 1);
        if (ack.done.isDone()) {
            // No cursor ledger took the write: the gate would hold an unrelated add.
            nextWrite.complete(null);
        }

        ManagedCursorImpl recovered = c.crash();
        assertTrue(recovered.isMessageDeleted(c.p.get(6)), "delete(p6) reported complete, lost in a crash");
        assertTrue(recovered.isMessageDeleted(c.p.get(7)), "delete(p7) reported complete, lost in a crash");
        nextWrite.complete(null);
        await().atMost(WAIT).until(ack.done::isDone);
    }

    /**
     * Ten holes acked one by one with a cap of five persisted ranges: every delete reported complete must
     * be deleted after a crash. The deletes past the cap complete once the holes below them close.
     */
    @Test(timeOut = 60_000)
    public void testDeletePastTheRangeCapIsNotReportedComplete() throws Exception {
        // A topic's persistence name: the truncation metric's attributes are named after it.
        String name = "public/default/persistent/range-cap";
        ManagedLedgerConfig config = new ManagedLedgerConfig().setMaxUnackedRangesToPersist(5);
        ManagedLedger ledger = factory.open(name, config);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = addEntries(ledger, cursor, 21);
        List<Recorded> deletes = new ArrayList<>();
        for (int hole = 1; hole < 20; hole += 2) {
            Recorded delete = new Recorded(cursor);
            deletes.add(delete);
            cursor.asyncDelete(p.get(hole), delete, null);
            await().atMost(WAIT).until(() -> queued(cursor) == 0 && writesInFlight(cursor) == 0);
        }
        ManagedCursorImpl recovered = crashAndRecover(name, "c1", config);
        for (int i = 0; i < deletes.size(); i++) {
            if (deletes.get(i).succeeded()) {
                assertTrue(recovered.isMessageDeleted(p.get(2 * i + 1)),
                        "delete(p" + (2 * i + 1) + ") reported complete, lost in a crash");
            }
        }

        cursor.markDelete(p.get(18));
        await().atMost(WAIT).until(() -> deletes.stream().allMatch(d -> d.done.isDone()));
        assertTrue(deletes.stream().allMatch(Recorded::succeeded));
        assertDeletedUpTo(crashAndRecover(name, "c1", config), p, 19, "after the holes closed");
    }

    /**
     * The same holes acked from the highest down: the first deletes complete with records that hold them,
     * then each ack adds a range below them. A record filled lowest first drops the ranges the records
     * before it held and completed; it must keep them and leave out the new lower ones.
     */
    @Test(timeOut = 60_000)
    public void testDeleteARecordHeldIsNotPushedPastTheRangeCapByLowerOnes() throws Exception {
        String name = "public/default/persistent/range-cap-pushed";
        ManagedLedgerConfig config = new ManagedLedgerConfig().setMaxUnackedRangesToPersist(5);
        ManagedLedger ledger = factory.open(name, config);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = addEntries(ledger, cursor, 21);
        List<Recorded> deletes = new ArrayList<>();
        for (int hole = 19; hole > 0; hole -= 2) {
            Recorded delete = new Recorded(cursor);
            deletes.add(delete);
            cursor.asyncDelete(p.get(hole), delete, null);
            await().atMost(WAIT).until(() -> queued(cursor) == 0 && writesInFlight(cursor) == 0);
        }
        assertTrue(deletes.get(0).succeeded(), "delete(p19) is within the cap");
        ManagedCursorImpl recovered = crashAndRecover(name, "c1", config);
        for (int i = 0; i < deletes.size(); i++) {
            if (deletes.get(i).succeeded()) {
                assertTrue(recovered.isMessageDeleted(p.get(19 - 2 * i)),
                        "delete(p" + (19 - 2 * i) + ") reported complete, lost in a crash");
            }
        }
    }
}
