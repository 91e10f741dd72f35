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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * A durable cursor reset (seek, reset-cursor) queued in the pending mark-delete queue before an individual
 * ack (#26304): the reset was reported complete, but only the ack queued last was written and only its
 * state change ran, so the reset was lost in memory and after a restart.
 */
public class ManagedCursorResetBehindAckTest extends ManagedCursorAckPathTestBase {
    private static final ManagedLedgerConfig CONFIG = new ManagedLedgerConfig();

    /** Entries p0..p9, cursor c1 with its mark-delete position at p4. */
    private final class Scenario {
        final String name;
        final ManagedCursorImpl cursor;
        final List<Position> p;
        final Recorded reset;
        final Recorded ack;

        Scenario(String name, boolean recoveredWithoutCursorLedger) throws Exception {
            this.name = name;
            ManagedLedger ledger = factory.open(name, CONFIG);
            ManagedCursorImpl first = (ManagedCursorImpl) ledger.openCursor("c1");
            this.p = addEntries(ledger, first, 10);
            first.markDelete(p.get(4));
            // A cursor recovered after a crash has no writable cursor ledger until its first write.
            this.cursor = recoveredWithoutCursorLedger ? crashAndRecover(name, "c1", CONFIG) : first;
            this.reset = new Recorded(cursor);
            this.ack = new Recorded(cursor);
        }

        void assertResetTookEffectAndSurvivesACrash() throws Exception {
            Position beforeFirst = cursor.getManagedLedger().getPreviousPosition(p.get(0));
            assertEquals(cursor.getReadPosition(), p.get(0), "the reset's read position");
            assertEquals(cursor.getMarkDeletedPosition(), beforeFirst, "the reset's mark-delete position");
            assertFalse(cursor.isMessageDeleted(p.get(5)), "the reset wins over the ack queued before it took effect");

            ManagedCursorImpl recovered = crashAndRecover(name, "c1", CONFIG);
            assertEquals(recovered.getMarkDeletedPosition(), beforeFirst,
                    "a restart must recover the reset that was reported complete");
            assertFalse(recovered.isMessageDeleted(p.get(5)));
            assertEquals(reset.calls.get(), 1, "the reset's callback fires exactly once");
            assertEquals(ack.calls.get(), 1, "the ack's callback fires exactly once");
            assertEquals(reset.violations, List.of());
            assertEquals(ack.violations, List.of());
        }
    }

    /** The sequence: a read in flight, the reset queued, an individual ack queued behind it. */
    @Test(timeOut = 60_000)
    public void testResetQueuedBeforeIndividualAckWhileReadInFlight() throws Exception {
        Scenario s = new Scenario("reset-then-ack-behind-read", false);
        CompletableFuture<Void> release = holdOneRead(s.cursor);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.reset);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
        s.cursor.asyncDelete(s.p.get(5), s.ack, null);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 2);
        release.complete(null);

        s.reset.done.get();
        await().atMost(WAIT).until(s.ack.done::isDone);
        assertTrue(s.ack.succeeded(), "the ack is ordered before the reset and superseded by it");
        s.assertResetTookEffectAndSurvivesACrash();
    }

    /** The same race while the recovered cursor creates its cursor ledger (NoLedger, then SwitchingLedger). */
    @Test(timeOut = 60_000)
    public void testResetQueuedBeforeIndividualAckWhileCursorLedgerIsCreated() throws Exception {
        Scenario s = new Scenario("reset-then-ack-no-ledger", true);
        CompletableFuture<Void> createGate = bkc.promiseAfter(0);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.reset);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
        s.cursor.asyncDelete(s.p.get(5), s.ack, null);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 2);
        createGate.complete(null);

        s.reset.done.get();
        await().atMost(WAIT).until(s.ack.done::isDone);
        s.assertResetTookEffectAndSurvivesACrash();
    }
}
