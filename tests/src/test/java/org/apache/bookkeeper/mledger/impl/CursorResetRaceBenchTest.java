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
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * A durable reset (seek, reset-cursor) racing an individual ack in the pending mark-delete queue
 * (upstream #26304): the reset must take effect, be durable, and win over the racing ack.
 */
public class CursorResetRaceBenchTest extends CursorBenchBase {

    /** Report 1 step by step: read held, reset queued, ack queued behind it, read released. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void resetQueuedBeforeAckWhileReadInFlight() throws Exception {
        raceResetAndAckBehindHeldRead("reset-then-ack", true);
    }

    /** Control arm: the ack is queued first. Passes on upstream too. */
    @Test(timeOut = 60_000)
    public void ackQueuedBeforeResetWhileReadInFlight() throws Exception {
        raceResetAndAckBehindHeldRead("ack-then-reset", false);
    }

    private void raceResetAndAckBehindHeldRead(String name, boolean resetFirst) throws Exception {
        ManagedLedger ledger = factory.open(name, config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(4));
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome reset = probe.newOutcome("reset");
        CallbackProbe.Outcome ack = probe.newOutcome("ack");

        CompletableFuture<Void> release = holdOneRead(cursor);
        if (resetFirst) {
            cursor.asyncResetCursor(p.get(0), false, probe.reset(reset));
            await().atMost(WAIT).until(() -> queued(cursor) == 1);
            cursor.asyncDelete(p.get(5), probe.delete(ack), null);
        } else {
            cursor.asyncDelete(p.get(5), probe.delete(ack), null);
            await().atMost(WAIT).until(() -> queued(cursor) == 1);
            cursor.asyncResetCursor(p.get(0), false, probe.reset(reset));
        }
        await().atMost(WAIT).until(() -> queued(cursor) == 2);
        release.complete(null);

        reset.future.get();
        await().atMost(WAIT).until(() -> ack.future.isDone());
        assertTrue(ack.succeeded(), "the ack is ordered before the reset and superseded by it");
        Position expectedMarkDelete = ledger.getPreviousPosition(p.get(0));
        assertResetState(cursor, p, expectedMarkDelete);
        assertEquals(probe.violations, List.of());

        ManagedCursorImpl recovered = crashAndRecover(name, "c1");
        assertEquals(recovered.getMarkDeletedPosition(), expectedMarkDelete,
                "recovery after a crash must reproduce the reset that was reported durable");
        assertFalse(recovered.isMessageDeleted(p.get(5)));
        assertEquals(reset.calls.get(), 1);
        assertEquals(ack.calls.get(), 1);
    }

    /**
     * Same race with no read in flight: a new cursor has no cursor ledger yet, so both operations
     * queue while its creation is held (NoLedger, then SwitchingLedger).
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void resetQueuedBeforeAckWhileCursorLedgerIsCreated() throws Exception {
        ManagedLedger ledger = factory.open("reset-no-ledger", config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.delete(List.of(p.get(0), p.get(1), p.get(2), p.get(3), p.get(4)));
        assertEquals(cursor.getMarkDeletedPosition(), p.get(4));
        // Recovery from the metadata store leaves an existing cursor without a writable ledger.
        cursor = crashAndRecover("reset-no-ledger", "c1");
        ledger = cursor.getManagedLedger();
        ManagedCursorImpl recovering = cursor;
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome reset = probe.newOutcome("reset");
        CallbackProbe.Outcome ack = probe.newOutcome("ack");

        CompletableFuture<Void> createGate = bkc.promiseAfter(0);
        cursor.asyncResetCursor(p.get(0), false, probe.reset(reset));
        await().atMost(WAIT).until(() -> queued(recovering) == 1);
        cursor.asyncDelete(p.get(5), probe.delete(ack), null);
        await().atMost(WAIT).until(() -> queued(recovering) == 2);
        createGate.complete(null);

        reset.future.get();
        await().atMost(WAIT).until(() -> ack.future.isDone());
        Position expectedMarkDelete = ledger.getPreviousPosition(p.get(0));
        assertResetState(cursor, p, expectedMarkDelete);
        assertEquals(probe.violations, List.of());

        ManagedCursorImpl recovered = crashAndRecover("reset-no-ledger", "c1");
        assertEquals(recovered.getMarkDeletedPosition(), expectedMarkDelete);
        assertFalse(recovered.isMessageDeleted(p.get(5)));
    }

    private static void assertResetState(ManagedCursorImpl cursor, List<Position> p, Position markDelete) {
        assertEquals(cursor.getReadPosition(), p.get(0), "the reset's read position");
        assertEquals(cursor.getMarkDeletedPosition(), markDelete, "the reset's mark-delete position");
        assertFalse(cursor.isMessageDeleted(p.get(5)), "reset wins over the ack queued before it took effect");
    }
}
