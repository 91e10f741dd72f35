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
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.client.MockBookKeeperAddGate;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.test.MockedBookKeeperTestCase;
import org.testng.annotations.Test;

/**
 * A reset requested while another is in progress is refused; its {@code resetFailed} must not run under the
 * cursor's {@code pendingMarkDeleteOps} monitor, which no cursor callback may hold (#15971): a caller that
 * takes its own lock or acks in the callback deadlocks against a write completing.
 */
public class ManagedCursorResetInProgressTest extends MockedBookKeeperTestCase {
    private static final Duration WAIT = Duration.ofSeconds(10);

    @Test(timeOut = 60_000)
    public void testResetRefusedWhileAnotherIsInProgressIsCalledBackOffTheMonitor() throws Exception {
        ManagedLedger ledger = factory.open("reset-in-progress", new ManagedLedgerConfig());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        Position[] p = new Position[4];
        for (int i = 0; i < p.length; i++) {
            p[i] = ledger.addEntry(("entry-" + i).getBytes());
        }
        // A backward reset from a recorded mark-delete position writes a record.
        cursor.markDelete(p[2]);
        // The first reset's cursor-ledger write is held: the reset stays in progress.
        CompletableFuture<Void> resetWrite = MockBookKeeperAddGate.holdAdd(bkc, 0);
        Reset first = new Reset(cursor);
        cursor.asyncResetCursor(p[0], false, first);
        await().atMost(WAIT).until(() -> writesInFlight(cursor) == 1);

        Reset second = new Reset(cursor);
        cursor.asyncResetCursor(p[1], false, second);
        await().atMost(WAIT).until(second.done::isDone);
        assertTrue(second.done.isCompletedExceptionally(), "another reset is in progress");
        assertFalse(second.underMonitor, "resetFailed called under the pendingMarkDeleteOps monitor");

        resetWrite.complete(null);
        await().atMost(WAIT).until(first.done::isDone);
        assertFalse(first.done.isCompletedExceptionally());
        assertEquals(cursor.getReadPosition(), p[0]);
    }

    /** Cursor-ledger writes issued and not completed. */
    private static int writesInFlight(ManagedCursorImpl cursor) throws Exception {
        Field f = ManagedCursorImpl.class.getDeclaredField("pendingMarkDeletedSubmittedCount");
        f.setAccessible(true);
        return (int) f.get(cursor);
    }

    private static final class Reset implements AsyncCallbacks.ResetCursorCallback {
        final CompletableFuture<Void> done = new CompletableFuture<>();
        private final ManagedCursorImpl cursor;
        volatile boolean underMonitor;

        Reset(ManagedCursorImpl cursor) {
            this.cursor = cursor;
        }

        @Override
        public void resetComplete(Object ctx) {
            underMonitor = Thread.holdsLock(cursor.pendingMarkDeleteOps);
            done.complete(null);
        }

        @Override
        public void resetFailed(ManagedLedgerException exception, Object ctx) {
            underMonitor = Thread.holdsLock(cursor.pendingMarkDeleteOps);
            done.completeExceptionally(exception);
        }
    }
}
