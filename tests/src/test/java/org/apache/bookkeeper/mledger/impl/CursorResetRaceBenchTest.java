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
        Scenario s = new Scenario(name, false);
        CompletableFuture<Void> release = holdOneRead(s.cursor);
        if (resetFirst) {
            s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
            await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
            s.cursor.asyncDelete(s.p.get(5), s.probe.delete(s.ack), null);
        } else {
            s.cursor.asyncDelete(s.p.get(5), s.probe.delete(s.ack), null);
            await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
            s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        }
        await().atMost(WAIT).until(() -> queued(s.cursor) == 2);
        release.complete(null);

        s.reset.future.get();
        await().atMost(WAIT).until(() -> s.ack.future.isDone());
        assertTrue(s.ack.succeeded(), "the ack is ordered before the reset and superseded by it");
        assertResetStateSurvivesACrash(s);
    }

    /**
     * Same race with no read in flight: the cursor a crash recovers has no cursor ledger yet, so both
     * operations queue while its creation is held (NoLedger, then SwitchingLedger).
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void resetQueuedBeforeAckWhileCursorLedgerIsCreated() throws Exception {
        Scenario s = new Scenario("reset-no-ledger", true);
        CompletableFuture<Void> createGate = bkc.promiseAfter(0);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
        s.cursor.asyncDelete(s.p.get(5), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 2);
        createGate.complete(null);

        s.reset.future.get();
        await().atMost(WAIT).until(() -> s.ack.future.isDone());
        assertResetStateSurvivesACrash(s);
    }

    private void assertResetStateSurvivesACrash(Scenario s) throws Exception {
        assertEquals(s.cursor.getReadPosition(), s.p.get(0), "the reset's read position");
        assertEquals(s.cursor.getMarkDeletedPosition(), s.beforeFirst(), "the reset's mark-delete position");
        assertFalse(s.cursor.isMessageDeleted(s.p.get(5)), "reset wins over the ack queued before it took effect");
        assertEquals(s.probe.violations, List.of());

        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getMarkDeletedPosition(), s.beforeFirst(),
                "recovery after a crash must reproduce the reset that was reported durable");
        assertFalse(recovered.isMessageDeleted(s.p.get(5)));
        assertEquals(s.reset.calls.get(), 1);
        assertEquals(s.ack.calls.get(), 1);
    }
}
